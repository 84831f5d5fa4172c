#include "panels/roofline_chart.h"

#include <QPainter>
#include <QPainterPath>
#include <QPushButton>
#include <algorithm>
#include <cmath>

#include "panels/panel_util.h"

namespace fluoro::ui {

namespace {

QString text_of(std::string_view s) {
    return QString::fromUtf8(s.data(), qsizetype(s.size()));
}

bool drawn(const OpCost& op) {
    return op.bytes > 0 && op.flops > 0 && op.ns > 0;
}

double intensity_of(const OpCost& op) {
    return op.flops / op.bytes;
}

double gflops_of(const OpCost& op) {
    return op.flops / double(op.ns);  // operations per ns = G per s
}

// The power of ten at or below (down) / above (up) v.
double decade(double v, bool up) {
    const double e = std::log10(std::max(v, 1e-12));
    return std::pow(10.0, up ? std::ceil(e) : std::floor(e));
}

QString rate_text(double v) {
    return v >= 100 ? QString::number(v, 'f', 0) : QString::number(v, 'g', 3);
}

}  // namespace

RooflineChart::RooflineChart(QWidget* parent)
    : QWidget(parent), measure_(new QPushButton(tr("Measure this machine's limits"), this)) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    measure_->setObjectName("measure_limits");
    measure_->setToolTip(
        tr("Runs fluoro_membw with the engine's threads (a few seconds of every "
           "core): read bandwidth, float32 FMA and int8 dot-product peaks"));
    connect(measure_, &QPushButton::clicked, this, &RooflineChart::measure_requested);
}

void RooflineChart::set_ops(std::vector<OpCost> ops, int64_t step, StepPhase phase) {
    ops_ = std::move(ops);
    step_ = step;
    phase_ = phase;
    fit_axes();
    update();
}

void RooflineChart::set_limits(std::optional<Limits> limits) {
    limits_ = limits;
    measure_->setText(limits_ ? tr("Measure again") : tr("Measure this machine's limits"));
    fit_axes();
    update();
}

size_t RooflineChart::point_count() const {
    return size_t(std::count_if(ops_.begin(), ops_.end(), drawn));
}

void RooflineChart::fit_axes() {
    double x_min = 1e300, x_max = 0, y_min = 1e300, y_max = 0;
    for (const OpCost& op : ops_) {
        if (!drawn(op)) continue;
        x_min = std::min(x_min, intensity_of(op));
        x_max = std::max(x_max, intensity_of(op));
        y_min = std::min(y_min, gflops_of(op));
        y_max = std::max(y_max, gflops_of(op));
    }
    if (limits_ && limits_->read_gbs > 0) {
        for (double peak : {limits_->fma_gflops, limits_->int8_gops}) {
            if (peak <= 0) continue;
            y_max = std::max(y_max, peak);
            x_max = std::max(x_max, peak / limits_->read_gbs);  // the ridge point
        }
    }
    if (x_max <= 0) {
        x_lo_ = 0.1, x_hi_ = 1000, y_lo_ = 0.1, y_hi_ = 1000;
        return;
    }
    x_lo_ = decade(x_min / 2, false);
    x_hi_ = decade(x_max * 2, true);
    y_lo_ = decade(y_min / 2, false);
    y_hi_ = decade(y_max * 2, true);
}

QRectF RooflineChart::plot_rect() const {
    const QFontMetrics fm(font());
    const double left = fm.horizontalAdvance(QStringLiteral("10000")) + 10;
    const double top = fm.height() * 2 + 14;
    return QRectF(left, top, std::max(10.0, width() - left - 12),
                  std::max(10.0, height() - top - 2.0 * fm.height() - 8));
}

void RooflineChart::resizeEvent(QResizeEvent*) {
    const QSize s = measure_->sizeHint();
    measure_->setGeometry(width() - s.width() - 4, 2, s.width(), s.height());
}

QPointF RooflineChart::to_screen(double intensity, double gflops) const {
    const QRectF r = plot_rect();
    const auto frac = [](double v, double lo, double hi) {
        return (std::log10(std::max(v, 1e-12)) - std::log10(lo)) /
               (std::log10(hi) - std::log10(lo));
    };
    return {r.left() + r.width() * frac(intensity, x_lo_, x_hi_),
            r.bottom() - r.height() * frac(gflops, y_lo_, y_hi_)};
}

std::optional<QPointF> RooflineChart::point_of(const QString& op) const {
    for (const OpCost& o : ops_)
        if (drawn(o) && QString::fromStdString(o.name) == op)
            return to_screen(intensity_of(o), gflops_of(o));
    return std::nullopt;
}

std::optional<double> RooflineChart::roof_share(const OpCost& op) const {
    if (!limits_ || limits_->read_gbs <= 0) return std::nullopt;
    const double peak = uses_int8_dot(op.weight_type) ? limits_->int8_gops : limits_->fma_gflops;
    if (peak <= 0) return std::nullopt;
    const double attainable = std::min(peak, limits_->read_gbs * intensity_of(op));
    return gflops_of(op) / attainable;
}

QString RooflineChart::headline() const {
    if (point_count() == 0)
        return tr("No traced step — View ▸ Trace every operation, then send a message.");
    QString h = tr("%1 step %2: %3 ops")
                    .arg(text_of(step_phase_name(phase_)))
                    .arg(step_)
                    .arg(point_count());
    if (limits_)
        h += tr(" · roofs from fluoro_membw, %1 threads: %2 GB/s, FMA %3 GFLOP/s, int8 %4 GOP/s")
                 .arg(limits_->threads)
                 .arg(rate_text(limits_->read_gbs), rate_text(limits_->fma_gflops),
                      rate_text(limits_->int8_gops));
    else
        h += tr(" · no roofs until this machine's limits are measured");
    return h;
}

void RooflineChart::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QPalette pal = palette();
    const QFontMetrics fm(font());
    p.setPen(pal.color(QPalette::Text));
    p.drawText(QRectF(4, fm.height() + 6, width() - 8, fm.height() + 2),
               Qt::AlignLeft | Qt::AlignVCenter,
               fm.elidedText(headline(), Qt::ElideRight, width() - 8));
    const QRectF r = plot_rect();
    // Decade grid and labels.
    p.setPen(pal.color(QPalette::Midlight));
    for (double x = x_lo_; x <= x_hi_ * 1.0001; x *= 10) {
        const double sx = to_screen(x, y_lo_).x();
        p.setPen(pal.color(QPalette::Midlight));
        p.drawLine(QPointF(sx, r.top()), QPointF(sx, r.bottom()));
        p.setPen(pal.color(QPalette::Text));
        p.drawText(QRectF(sx - 30, r.bottom() + 2, 60, fm.height()), Qt::AlignHCenter,
                   rate_text(x));
    }
    for (double y = y_lo_; y <= y_hi_ * 1.0001; y *= 10) {
        const double sy = to_screen(x_lo_, y).y();
        p.setPen(pal.color(QPalette::Midlight));
        p.drawLine(QPointF(r.left(), sy), QPointF(r.right(), sy));
        p.setPen(pal.color(QPalette::Text));
        p.drawText(QRectF(0, sy - fm.height() / 2.0, r.left() - 4, fm.height()), Qt::AlignRight,
                   rate_text(y));
    }
    p.drawText(QRectF(r.left(), r.bottom() + fm.height() + 2, r.width(), fm.height()),
               Qt::AlignHCenter, tr("operations per byte read"));
    p.drawText(QRectF(r.left() + 4, r.top() + 2, r.width(), fm.height()), Qt::AlignLeft,
               tr("G operations / s"));
    // Roofs: bandwidth × intensity up to each peak.
    if (limits_ && limits_->read_gbs > 0) {
        int i = 0;
        for (const auto& [peak, name] : {std::pair{limits_->fma_gflops, tr("FMA")},
                                         std::pair{limits_->int8_gops, tr("int8")}}) {
            if (peak <= 0) continue;
            const double ridge = peak / limits_->read_gbs;
            QPainterPath roof;
            roof.moveTo(to_screen(x_lo_, limits_->read_gbs * x_lo_));
            roof.lineTo(to_screen(ridge, peak));
            roof.lineTo(to_screen(x_hi_, peak));
            p.setPen(QPen(category_color(i == 0 ? 4 : 6), 2));  // FMA, int8
            p.setBrush(Qt::NoBrush);
            p.save();
            p.setClipRect(r);
            p.drawPath(roof);
            p.restore();
            const QPointF at = to_screen(x_hi_, peak);
            p.drawText(QRectF(at.x() - 200, at.y() - fm.height() - 1, 196, fm.height()),
                       Qt::AlignRight, name + " " + rate_text(peak));
            ++i;
        }
    }
    // The ops; a name where it does not cover another (right of the point, else above, else
    // below; hover names them all).
    std::vector<QRectF> taken;
    for (const OpCost& op : ops_) {
        if (!drawn(op)) continue;
        const QPointF c = to_screen(intensity_of(op), gflops_of(op));
        p.setPen(pal.color(QPalette::Text));
        p.setBrush(category_color(size_t(op.category)));
        p.drawEllipse(c, 4.5, 4.5);
        taken.push_back(QRectF(c.x() - 5, c.y() - 5, 10, 10));
    }
    for (const OpCost& op : ops_) {
        if (!drawn(op)) continue;
        const QPointF c = to_screen(intensity_of(op), gflops_of(op));
        const QString name = QString::fromStdString(op.name);
        const double w = fm.horizontalAdvance(name), h = fm.height() + 2;
        for (const QRectF& box :
             {QRectF(c.x() + 7, c.y() - h / 2, w, h), QRectF(c.x() - w / 2, c.y() - 6 - h, w, h),
              QRectF(c.x() - w / 2, c.y() + 6, w, h)}) {
            const bool free =
                r.contains(box) && std::none_of(taken.begin(), taken.end(),
                                                [&](const QRectF& t) { return t.intersects(box); });
            if (!free) continue;
            p.setPen(pal.color(QPalette::Text));
            p.drawText(box, Qt::AlignLeft | Qt::AlignVCenter, name);
            taken.push_back(box);
            break;
        }
    }
    p.setPen(pal.color(QPalette::Mid));
    p.setBrush(Qt::NoBrush);
    p.drawRect(r);
}

QString RooflineChart::tooltip_at(QPoint pos) const {
    for (const OpCost& op : ops_) {
        if (!drawn(op)) continue;
        const QPointF c = to_screen(intensity_of(op), gflops_of(op));
        if (std::hypot(c.x() - pos.x(), c.y() - pos.y()) > 7) continue;
        QString tip = tr("%1 · %2 call(s) · %3 µs\n%4 operations per byte · %5 G operations/s · "
                         "%6 GB/s")
                          .arg(QString::fromStdString(op.name))
                          .arg(op.calls)
                          .arg(double(op.ns) * 1e-3, 0, 'f', 1)
                          .arg(intensity_of(op), 0, 'g', 3)
                          .arg(gflops_of(op), 0, 'f', 1)
                          .arg(op.bytes / double(op.ns), 0, 'f', 2);
        if (const auto share = roof_share(op))
            tip += tr("\n%1 % of its roof (%2)")
                       .arg(100 * *share, 0, 'f', 1)
                       .arg(uses_int8_dot(op.weight_type) ? tr("int8") : tr("FMA"));
        return tip;
    }
    return {};
}

bool RooflineChart::event(QEvent* event) {
    return show_hover_tooltip(this, event, [this](QPoint p) { return tooltip_at(p); }) ||
           QWidget::event(event);
}

}  // namespace fluoro::ui
