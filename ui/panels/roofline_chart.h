// The profiler's roofline plot of one traced step: one point per op (every layer summed, from
// telemetry/op_costs.h) at its arithmetic intensity (operations per byte read, log scale) and the
// rate it reached (GFLOP/s, log scale), under the machine's roofs — bandwidth × intensity up to
// the float32 FMA peak and up to the int8 dot peak, as fluoro_membw measured them (the window
// measures on request and remembers; set_limits). An op's share of its own roof (int8 for a
// quantized matmul, FMA otherwise) is in its tooltip. Without limits the points stand alone.
#pragma once

#include <QWidget>

class QPushButton;
#include <optional>
#include <vector>

#include "telemetry/events.h"
#include "telemetry/op_costs.h"

namespace fluoro::ui {

class RooflineChart : public QWidget {
    Q_OBJECT
  public:
    struct Limits {
        double read_gbs = 0, fma_gflops = 0, int8_gops = 0;
        int threads = 0;  // the thread count they were measured with
    };
    explicit RooflineChart(QWidget* parent = nullptr);
    // The ops of a traced step (step index and phase for the title); empty: nothing traced yet.
    void set_ops(std::vector<OpCost> ops, int64_t step, StepPhase phase);
    void set_limits(std::optional<Limits> limits);
    const std::optional<Limits>& limits() const { return limits_; }
    // The ops drawn as points (they read bytes and did arithmetic).
    size_t point_count() const;
    QString tooltip_at(QPoint pos) const;
    QString headline() const;
    // Where an op's point is drawn (for tests); nullopt when it is not drawn.
    std::optional<QPointF> point_of(const QString& op) const;
    QPushButton* measure_button() const { return measure_; }
    QSize sizeHint() const override { return {480, 240}; }

  signals:
    void measure_requested();

  protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;  // hover tooltips
    void resizeEvent(QResizeEvent* event) override;

  private:
    QRectF plot_rect() const;
    void fit_axes();
    QPointF to_screen(double intensity, double gflops) const;
    std::optional<double> roof_share(const OpCost& op) const;  // achieved / attainable
    std::vector<OpCost> ops_;
    int64_t step_ = -1;
    StepPhase phase_ = StepPhase::Decode;
    std::optional<Limits> limits_;
    QPushButton* measure_ = nullptr;
    double x_lo_ = 0.1, x_hi_ = 1000, y_lo_ = 0.1, y_hi_ = 1000;  // log axes' ranges
};

}  // namespace fluoro::ui
