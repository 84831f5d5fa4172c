#include "panels/line_chart.h"

#include <QChart>
#include <QEvent>
#include <QLegend>
#include <QLineSeries>
#include <QPen>
#include <QTimer>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

#include "panels/panel_util.h"

namespace fluoro::ui {

LineChart::LineChart(const QString& title, const QString& x_title, const QString& y_title,
                     QWidget* parent)
    : QChartView(parent),
      x_axis_(new QValueAxis),
      y_axis_(new QValueAxis),
      throttle_(new QTimer(this)) {
    throttle_->setSingleShot(true);
    throttle_->setInterval(kThrottleMs);
    connect(throttle_, &QTimer::timeout, this, [this] {
        if (dirty_ && isVisible()) flush();
    });
    auto* chart = new QChart;
    chart->setTitle(title);
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->legend()->setAlignment(Qt::AlignBottom);
    x_axis_->setTitleText(x_title);
    y_axis_->setTitleText(y_title);
    for (QValueAxis* axis : {x_axis_, y_axis_}) {
        axis->setLabelFormat(QStringLiteral("%g"));
        axis->setTickCount(5);
    }
    chart->addAxis(x_axis_, Qt::AlignBottom);
    chart->addAxis(y_axis_, Qt::AlignLeft);
    setChart(chart);
    setRenderHint(QPainter::Antialiasing);
    setMinimumHeight(160);
    apply_palette();
    fit_axes();
}

int LineChart::add_series(const QString& name, const QColor& color) {
    auto* series = new QLineSeries;
    series->setName(name);
    series->setPen(QPen(color, 1.6));
    chart()->addSeries(series);
    series->attachAxis(x_axis_);
    series->attachAxis(y_axis_);
    series_.push_back(series);
    points_.emplace_back();
    return int(series_.size()) - 1;
}

namespace {

// At most ~max_points points standing for `points`: the first and last point, and per bucket of
// consecutive points its lowest and highest (in x order), so spikes survive decimation.
QList<QPointF> decimate(const QList<QPointF>& points, int max_points) {
    if (points.size() <= max_points) return points;
    QList<QPointF> out;
    const qsizetype buckets = std::max(1, (max_points - 2) / 2);
    const qsizetype n = points.size() - 2;  // the inner points
    out.reserve(buckets * 2 + 2);
    out.append(points.front());
    for (qsizetype b = 0; b < buckets; ++b) {
        const qsizetype lo = 1 + b * n / buckets, hi = 1 + (b + 1) * n / buckets;
        if (lo >= hi) continue;
        qsizetype imin = lo, imax = lo;
        for (qsizetype i = lo; i < hi; ++i) {
            if (points[i].y() < points[imin].y()) imin = i;
            if (points[i].y() > points[imax].y()) imax = i;
        }
        out.append(points[std::min(imin, imax)]);
        if (imin != imax) out.append(points[std::max(imin, imax)]);
    }
    out.append(points.back());
    return out;
}

}  // namespace

void LineChart::note_extent(const QList<QPointF>& points) {
    for (const QPointF& p : points) {
        x_max_ = any_point_ ? std::max(x_max_, p.x()) : p.x();
        y_max_ = std::max(y_max_, p.y());
        any_point_ = true;
    }
}

void LineChart::set_points(int series, const QList<QPointF>& points) {
    if (series < 0 || size_t(series) >= series_.size()) return;
    points_[size_t(series)] = points;
    // The extent over every series again (a series may have shrunk).
    any_point_ = false;
    x_max_ = y_max_ = 0;
    for (const QList<QPointF>& p : points_) note_extent(p);
    dirty_ = true;
    schedule();
}

void LineChart::append_points(int series, const QList<QPointF>& points) {
    if (series < 0 || size_t(series) >= series_.size() || points.isEmpty()) return;
    points_[size_t(series)].append(points);
    note_extent(points);
    dirty_ = true;
    schedule();
}

void LineChart::schedule() {
    // Never on the caller's time (a panel's consume()): the points go on the chart in their own
    // event-loop turn, at most every kThrottleMs.
    if (isVisible() && !throttle_->isActive()) throttle_->start();
}

void LineChart::flush() {
    if (!dirty_) return;
    // One replace() per series (a single repaint), decimated to what a chart this size can show.
    for (size_t i = 0; i < series_.size(); ++i)
        series_[i]->replace(decimate(points_[i], kMaxShownPoints));
    fit_axes();
    dirty_ = false;
    throttle_->start();  // the next points wait at least kThrottleMs
}

void LineChart::showEvent(QShowEvent* event) {
    QChartView::showEvent(event);
    // Shown from inside a panel's consume() (its stack switching to the charts): the pending
    // points go on in the next event-loop turn, not on consume()'s time.
    if (dirty_) QMetaObject::invokeMethod(this, &LineChart::flush, Qt::QueuedConnection);
}

void LineChart::set_y_range(double lo, double hi) {
    fixed_y_ = true;
    y_axis_->setRange(lo, hi);
}

void LineChart::set_integer_x() {
    integer_x_ = true;
    x_axis_->setLabelFormat(QStringLiteral("%.0f"));
    x_axis_->setTickType(QValueAxis::TicksDynamic);
    x_axis_->setTickAnchor(0);
    fit_axes();
}

void LineChart::clear_points() {
    for (auto& p : points_) p.clear();
    any_point_ = false;
    x_max_ = y_max_ = 0;
    dirty_ = true;
    if (isVisible()) flush();  // cheap: empty series
}

int LineChart::point_count(int series) const {
    if (series < 0 || size_t(series) >= series_.size()) return 0;
    return int(points_[size_t(series)].size());
}

int LineChart::shown_point_count(int series) const {
    if (series < 0 || size_t(series) >= series_.size()) return 0;
    return int(series_[size_t(series)]->count());
}

void LineChart::changeEvent(QEvent* event) {
    QChartView::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) apply_palette();
}

void LineChart::fit_axes() {
    const double x_max = x_max_, y_max = y_max_;
    const bool any = any_point_;
    // Round ranges and ticks (0, 0.05, 0.1, … rather than 0.0327…), so labels stay short.
    if (integer_x_) {
        const double top = std::max(std::ceil(x_max), 1.0);
        x_axis_->setRange(0, top);
        x_axis_->setTickInterval(std::max(1.0, std::ceil(top / 5.0)));
    } else {
        x_axis_->setRange(0, any && x_max > 0 ? x_max : 1.0);
        x_axis_->applyNiceNumbers();
    }
    if (!fixed_y_) {
        y_axis_->setRange(0, y_max > 0 ? y_max * 1.05 : 1.0);
        y_axis_->applyNiceNumbers();
    }
}

void LineChart::apply_palette() {
    const QPalette pal = palette();
    QChart* c = chart();
    c->setBackgroundBrush(pal.color(QPalette::Base));
    c->setBackgroundRoundness(0);
    c->setTitleBrush(pal.color(QPalette::WindowText));
    c->legend()->setLabelColor(pal.color(QPalette::WindowText));
    QColor grid = pal.color(QPalette::WindowText);
    grid.setAlpha(40);
    for (QValueAxis* axis : {x_axis_, y_axis_}) {
        axis->setLabelsColor(pal.color(QPalette::WindowText));
        axis->setTitleBrush(pal.color(QPalette::WindowText));
        axis->setGridLineColor(grid);
        axis->setLinePenColor(pal.color(QPalette::Mid));
    }
    setBackgroundBrush(pal.color(QPalette::Window));
}

}  // namespace fluoro::ui
