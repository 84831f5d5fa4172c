// The profiler dock: per-step stacked time by op category, the latest traced step's timeline
// (step_timeline.h) and roofline (roofline_chart.h), tok/s and memory over the run, and the "why is
// it slow" split (load, prefill, decode, sampling, draft, verify, between steps).
#pragma once

#include <optional>

#include "panels/event_panel.h"
#include "panels/profiler_model.h"

class QLabel;
class QStackedWidget;
class QTabWidget;
class QTableView;

namespace fluoro::ui {

class LineChart;
class RooflineChart;
class StepTimeline;

// One bar per step, stacked by TimeCategory (or the step's wall time when no op times came).
class StepStackChart : public QWidget {
    Q_OBJECT
  public:
    explicit StepStackChart(QWidget* parent = nullptr);
    void set_state(const ProfilerState* state);
    QString tooltip_at(QPoint pos) const;
    // The step (index into the state's steps) drawn at pos, -1 for none.
    int step_at(QPoint pos) const;
    QSize sizeHint() const override { return {480, 200}; }

  signals:
    // A bar was clicked: its position in the state's steps.
    void step_clicked(int position);

  protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

  private:
    QRectF plot_rect() const;
    const ProfilerState* state_ = nullptr;
    double max_ms_ = 0;
    size_t measured_ = 0;  // steps max_ms_ covers
};

class ProfilerPanel : public EventPanel {
    Q_OBJECT
  public:
    explicit ProfilerPanel(QWidget* parent = nullptr);

    QString panel_id() const override { return QStringLiteral("profiler"); }
    QString title() const override { return QStringLiteral("Profiler"); }
    void consume(const std::vector<Event>& batch) override;
    void reset() override;

    const ProfilerState& state() const { return state_; }
    ProfileSplitModel* split_model() const { return model_; }
    StepStackChart* step_chart() const { return steps_; }
    StepTimeline* timeline() const { return timeline_; }
    RooflineChart* roofline() const { return roofline_; }
    // Shows step `position` of the run (a traced one) in the Timeline and Roofline tabs instead of
    // the latest traced step, until the next run; false when it has no trace.
    bool pick_step(int position);
    LineChart* speed_chart() const { return speed_; }
    LineChart* memory_chart() const { return memory_; }
    QString notice() const;

  private:
    void refresh();
    void restart_charts();

    ProfilerState state_;
    QStackedWidget* stack_ = nullptr;
    QLabel* notice_ = nullptr;
    StepTimeline* timeline_ = nullptr;
    RooflineChart* roofline_ = nullptr;
    QTabWidget* charts_ = nullptr;
    std::optional<size_t> picked_;  // the step the Timeline shows, else the latest traced
    StepStackChart* steps_ = nullptr;
    LineChart* speed_ = nullptr;
    LineChart* memory_ = nullptr;
    QTableView* table_ = nullptr;
    ProfileSplitModel* model_ = nullptr;
    int decode_series_ = 0;
    int weights_series_ = 0, kv_series_ = 0, kv_used_series_ = 0, scratch_series_ = 0;
    size_t charted_steps_ = 0, charted_memory_ = 0;  // what the charts have been given
};

}  // namespace fluoro::ui
