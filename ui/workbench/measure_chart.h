// A stored measurement's plot (app/measure/measure_plots.h MeasurePlot) as a Qt Charts view: lines
// with point markers over value axes, or grouped bars over the plot's categories; colors from the
// widget palette (light or dark).
#pragma once

#include "measure/measure_plots.h"

class QChartView;
class QWidget;

namespace fluoro::ui {

QChartView* make_measure_chart(const app::MeasurePlot& plot, QWidget* parent = nullptr);

}  // namespace fluoro::ui
