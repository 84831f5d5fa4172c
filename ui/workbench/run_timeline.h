// The run timeline: a slider over one finished (or stored) run's events. Moving it asks for the
// panels to be reset and re-fed the events up to that point (scrubbed), coalesced to one request
// per 30 ms while dragging. The events come from the live run as it was received or, for a stored
// run, from app/replay's run_events() — the same stream either way.
#pragma once

#include <QLabel>
#include <QSlider>
#include <QTimer>
#include <QWidget>
#include <vector>

#include "telemetry/events.h"

namespace fluoro::ui {

class RunTimeline : public QWidget {
    Q_OBJECT
  public:
    explicit RunTimeline(QWidget* parent = nullptr);

    // The run to scrub; the slider goes to its end (nothing is re-fed).
    void set_events(std::vector<Event> events, const QString& title);
    void clear();
    const std::vector<Event>& events() const { return events_; }
    int position() const { return position_; }
    // Emits scrubbed with the first `count` events at once (the slider coalesces into this).
    void scrub_to(int count);

  signals:
    void scrubbed(const std::vector<fluoro::Event>& prefix);

  private:
    void update_label();

    QSlider* slider_;
    QLabel* label_;
    QTimer coalesce_;
    std::vector<Event> events_;
    QString title_;
    int position_ = 0;
};

}  // namespace fluoro::ui
