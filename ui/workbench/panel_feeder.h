// Feeds the dock panels their events without holding the GUI thread for long: every panel
// operation (reset, consume a batch, select a token) becomes a task in one FIFO queue, and a
// zero-interval timer runs one task per event-loop turn — input, timers and painting get their
// turn between two panels, so the longest stall is one panel's consume(), not all of them. A panel
// whose dock shows nothing (a background tab, a closed dock) keeps its events until it is shown.
#pragma once

#include <QObject>
#include <QTimer>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "telemetry/events.h"

class QDockWidget;

namespace fluoro::ui {

class EventPanel;

class PanelFeeder : public QObject {
    Q_OBJECT
  public:
    explicit PanelFeeder(QObject* parent = nullptr);

    void add(EventPanel* panel, QDockWidget* dock);
    void feed(const std::vector<Event>& batch);
    void reset();
    void select_token(uint64_t run, int64_t index);
    // Runs every queued task now (before a screenshot; tests).
    void flush();
    bool idle() const { return tasks_.empty(); }
    // Events handed to panels so far (a batch counts once per panel that consumed it).
    int64_t events_fed() const { return fed_; }
    // The longest single consume() of the panel with this id so far, in ms (its catch-up included
    // as its own call): what a stall test reports per panel.
    double worst_consume_ms(const QString& panel_id) const;
    QString consume_report() const;  // "attention 3.1 ms, kv 0.4 ms, …"

  private:
    void post(std::function<void()> task);
    void run_one();
    void consume(size_t i, const std::shared_ptr<const std::vector<Event>>& batch);
    void catch_up(size_t i);
    void timed_consume(size_t i, const std::vector<Event>& events);
    bool on_screen(size_t i) const;

    struct Slot {
        EventPanel* panel;
        QDockWidget* dock;
        std::vector<Event> pending;  // events kept while the dock showed nothing
        double worst_ms = 0;         // longest consume()
    };
    std::vector<Slot> slots_;
    std::deque<std::function<void()>> tasks_;
    QTimer pump_;
    int64_t fed_ = 0;
};

}  // namespace fluoro::ui
