// The profiler's timeline of one traced step (telemetry level trace: StepEvent::trace): a flame
// view over the step's wall time — the layers on the top row, each layer's ops beneath in the
// order they ran, coloured by category, then one row per host thread with its busy spans (the
// engine thread's waits for the others in grey). Hovering names the op with its layer, time,
// bytes and the GB/s and GFLOP/s they imply. Shows the latest traced step unless one is picked.
#pragma once

#include <QWidget>
#include <optional>

#include "telemetry/events.h"

namespace fluoro::ui {

class StepTimeline : public QWidget {
    Q_OBJECT
  public:
    explicit StepTimeline(QWidget* parent = nullptr);
    // A step whose trace to draw (copied: the panel's list may grow); nullopt or a step without a
    // trace: the notice of how to get one.
    void set_step(std::optional<StepEvent> step);
    const std::optional<StepEvent>& step() const { return step_; }
    QString tooltip_at(QPoint pos) const;
    // The vertical middle of a row: 0 layers, 1 ops, 2 + w host thread w.
    int row_middle(int row) const;
    QString headline() const;
    QSize sizeHint() const override { return {480, 200}; }

  protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;  // hover tooltips

  private:
    QRectF plot_rect() const;
    double x_of(int64_t ns) const;
    int row_height() const;
    std::optional<StepEvent> step_;
};

}  // namespace fluoro::ui
