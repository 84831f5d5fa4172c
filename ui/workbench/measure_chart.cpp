#include "workbench/measure_chart.h"

#include <QApplication>
#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QPalette>
#include <QPen>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <iterator>

namespace fluoro::ui {

namespace {

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

// Ten distinct hues (Qt's themes repeat after five, so a sixth series looked like the first).
QColor series_color(size_t i) {
    static const QRgb colors[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                  0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
    return QColor(colors[i % std::size(colors)]);
}

}  // namespace

QChartView* make_measure_chart(const app::MeasurePlot& plot, QWidget* parent) {
    auto* chart = new QChart;
    chart->setTitle(qs(plot.title));
    const QPalette pal = parent ? parent->palette() : QApplication::palette();
    const bool dark = pal.color(QPalette::Window).lightness() < 128;
    chart->setTheme(dark ? QChart::ChartThemeDark : QChart::ChartThemeLight);
    chart->setBackgroundBrush(pal.color(QPalette::Base));
    chart->setTitleBrush(pal.color(QPalette::Text));
    chart->legend()->setLabelColor(pal.color(QPalette::Text));
    chart->legend()->setVisible(plot.series.size() > 1 || !plot.categories.empty());
    // Many series: a column on the right, where long names ("prompt_lookup summarize") fit; a
    // row under the plot elides them.
    chart->legend()->setAlignment(plot.series.size() > 4 ? Qt::AlignRight : Qt::AlignBottom);
    double y_max = 0;
    for (const app::PlotSeries& s : plot.series)
        for (const auto& [x, y] : s.points) y_max = std::max(y_max, y);
    auto* y_axis = new QValueAxis;
    y_axis->setTitleText(qs(plot.y_label));
    y_axis->setRange(0, plot.y_is_fraction ? 1.0 : (y_max > 0 ? y_max * 1.08 : 1.0));
    y_axis->setLabelsColor(pal.color(QPalette::Text));
    y_axis->setTitleBrush(pal.color(QPalette::Text));
    chart->addAxis(y_axis, Qt::AlignLeft);
    if (!plot.categories.empty()) {
        auto* bars = new QBarSeries;
        for (const app::PlotSeries& s : plot.series) {
            auto* set = new QBarSet(qs(s.name));
            set->setColor(series_color(size_t(bars->count())));
            std::vector<double> values(plot.categories.size(), 0.0);
            for (const auto& [x, y] : s.points)
                if (x >= 0 && size_t(x) < values.size()) values[size_t(x)] = y;
            for (const double v : values) *set << v;
            bars->append(set);
        }
        chart->addSeries(bars);
        auto* x_axis = new QBarCategoryAxis;
        for (const std::string& c : plot.categories) x_axis->append(qs(c));
        x_axis->setTitleText(qs(plot.x_label));
        x_axis->setLabelsColor(pal.color(QPalette::Text));
        x_axis->setTitleBrush(pal.color(QPalette::Text));
        chart->addAxis(x_axis, Qt::AlignBottom);
        bars->attachAxis(x_axis);
        bars->attachAxis(y_axis);
    } else {
        double x_min = 0, x_max = 0;
        bool any = false, whole = true;
        for (const app::PlotSeries& s : plot.series)
            for (const auto& [x, y] : s.points) {
                x_min = any ? std::min(x_min, x) : x;
                x_max = any ? std::max(x_max, x) : x;
                whole = whole && x == std::floor(x);
                any = true;
            }
        auto* x_axis = new QValueAxis;
        x_axis->setTitleText(qs(plot.x_label));
        const double lo = std::min(0.0, x_min);
        double hi = x_max > x_min ? x_max : x_min + 1;
        if (whole && hi - lo <= 64) {  // counts (layers, draft positions, chunks): whole ticks
            const double step = std::ceil((hi - lo) / 10.0);
            const int ticks = int(std::ceil((hi - lo) / step)) + 1;
            hi = lo + step * (ticks - 1);
            x_axis->setTickCount(ticks);
            x_axis->setLabelFormat("%d");
        }
        x_axis->setRange(lo, hi);
        x_axis->setLabelsColor(pal.color(QPalette::Text));
        x_axis->setTitleBrush(pal.color(QPalette::Text));
        chart->addAxis(x_axis, Qt::AlignBottom);
        for (size_t i = 0; i < plot.series.size(); ++i) {
            const app::PlotSeries& s = plot.series[i];
            auto* line = new QLineSeries;
            line->setName(qs(s.name));
            QPen pen(series_color(i));
            pen.setWidthF(2);
            line->setPen(pen);
            line->setMarkerSize(6);
            line->setPointsVisible(true);
            for (const auto& [x, y] : s.points) line->append(x, y);
            chart->addSeries(line);
            line->attachAxis(x_axis);
            line->attachAxis(y_axis);
        }
    }
    auto* view = new QChartView(chart, parent);
    view->setRenderHint(QPainter::Antialiasing);
    view->setMinimumSize(200, 150);
    return view;
}

}  // namespace fluoro::ui
