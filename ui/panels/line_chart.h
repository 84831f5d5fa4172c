// A small Qt Charts line chart for "X over time" readouts: named series whose points are set or
// appended per batch (never per event) and put on the chart later, from a timer, in one
// QXYSeries::replace() per series, at most every kThrottleMs and only while the chart is visible; a
// series longer than kMaxShownPoints is drawn decimated (min and max of each bucket, so peaks
// stay); axes fitted to the data from running maxima; colors following the widget palette (light or
// dark).
#pragma once

#include <QChartView>
#include <QList>
#include <QPointF>
#include <QString>
#include <vector>

class QLineSeries;
class QTimer;
class QValueAxis;

namespace fluoro::ui {

class LineChart : public QChartView {
    Q_OBJECT
  public:
    LineChart(const QString& title, const QString& x_title, const QString& y_title,
              QWidget* parent = nullptr);

    // Adds a series and returns its index.
    int add_series(const QString& name, const QColor& color);
    void set_points(int series, const QList<QPointF>& points);
    // Appends points to a series (the cheap path for a series that only grows).
    void append_points(int series, const QList<QPointF>& points);
    // Puts pending points on the chart now (e.g. before painting a hidden chart for an export).
    void flush();
    static constexpr int kThrottleMs = 200;
    static constexpr int kMaxShownPoints = 600;  // per series, drawn
    // Fixes the y range (e.g. [0, 1] for rates); otherwise it follows the data from 0.
    void set_y_range(double lo, double hi);
    // The x axis counts things (requests, steps): whole-number ticks.
    void set_integer_x();
    void clear_points();
    int point_count(int series) const;        // the points set, shown or pending
    int shown_point_count(int series) const;  // the points on the chart (decimated)
    QSize sizeHint() const override { return {360, 230}; }

  protected:
    void changeEvent(QEvent* event) override;
    void showEvent(QShowEvent* event) override;

  private:
    void fit_axes();
    void schedule();
    void note_extent(const QList<QPointF>& points);
    void apply_palette();

    std::vector<QLineSeries*> series_;
    std::vector<QList<QPointF>> points_;  // what each series should hold
    bool dirty_ = false;                  // points_ not yet on the chart
    QValueAxis* x_axis_ = nullptr;
    QValueAxis* y_axis_ = nullptr;
    QTimer* throttle_ = nullptr;
    bool fixed_y_ = false;
    bool any_point_ = false;
    double x_max_ = 0, y_max_ = 0;  // over every series' points
    bool integer_x_ = false;
};

}  // namespace fluoro::ui
