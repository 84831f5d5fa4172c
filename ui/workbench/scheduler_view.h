// The Scheduler dock: the window's API server's continuous batching as it happens (serving with
// parallel slots; app/server/batch_schedule.h). One row per slot, time running left to right:
// each step a box per request in it — orange for a chunk of its prompt, blue for its next token —
// labelled with the request's run number where it fits; under them the queue's depth after each
// step; beside each row the KV tokens its sequence holds. A tooltip names the request, the step,
// its tokens and time. Polls the schedule every 100 ms (the engine's thread never waits on it).
#pragma once

#include <QTimer>
#include <QWidget>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "server/batch_schedule.h"

namespace fluoro::ui {

class SchedulerView : public QWidget {
    Q_OBJECT
  public:
    // source: the schedule being served now (null while not serving with parallel slots).
    explicit SchedulerView(std::function<std::shared_ptr<app::BatchSchedule>()> source,
                           QWidget* parent = nullptr);

    // Takes what the schedule recorded since the last poll (the timer does it every 100 ms).
    void poll();
    const std::deque<app::ScheduleStep>& steps() const { return steps_; }
    int64_t n_slots() const { return slots_; }
    int64_t max_waiting() const { return max_waiting_; }
    // The box under (x, y) in widget coordinates: the step and part index, or {-1, -1}.
    std::pair<int, int> hit(QPoint p) const;
    QString describe(int step, int part) const;  // the tooltip of a box

  protected:
    void paintEvent(QPaintEvent* e) override;
    bool event(QEvent* e) override;  // tooltips

  private:
    struct Box {
        QRectF rect;
        int step = 0, part = 0;
    };

    std::function<std::shared_ptr<app::BatchSchedule>()> source_;
    std::shared_ptr<app::BatchSchedule> current_;
    std::deque<app::ScheduleStep> steps_;  // the last kMaxSteps of the current schedule
    int64_t slots_ = 0, max_waiting_ = 0;
    std::vector<Box> boxes_;  // as last painted
    QTimer timer_;
};

}  // namespace fluoro::ui
