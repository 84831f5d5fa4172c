// The profiler's roofline roofs: this machine's read bandwidth and compute peaks, measured with
// fluoro_membw (app/measure/machine_limits.h) on a pool thread when the Roofline tab's button
// asks, with the loaded model's thread count, and remembered per thread count in the settings so
// that a later session draws them at once.
#include <QApplication>
#include <QPointer>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QThreadPool>

#include "measure/machine_limits.h"
#include "panels/profiler_panel.h"
#include "panels/roofline_chart.h"
#include "workbench/engine_bridge.h"
#include "workbench/main_window.h"

namespace fluoro::ui {

namespace {

QString limits_key(int threads) {
    return QStringLiteral("machine_limits/threads_%1").arg(threads);
}

RooflineChart* roofline_of(const std::vector<EventPanel*>& panels) {
    for (EventPanel* p : panels)
        if (auto* profiler = qobject_cast<ProfilerPanel*>(p)) return profiler->roofline();
    return nullptr;
}

}  // namespace

void MainWindow::connect_roofline() {
    if (RooflineChart* chart = roofline_of(panels_))
        connect(chart, &RooflineChart::measure_requested, this, &MainWindow::measure_limits);
}

void MainWindow::show_stored_limits() {
    RooflineChart* chart = roofline_of(panels_);
    const auto& m = bridge_->model();
    if (!chart || !m) return;
    const QStringList v = QSettings().value(limits_key(m->threads)).toStringList();
    if (v.size() != 3) return chart->set_limits(std::nullopt);
    RooflineChart::Limits l{v[0].toDouble(), v[1].toDouble(), v[2].toDouble(), m->threads};
    chart->set_limits(l.read_gbs > 0 ? std::optional(l) : std::nullopt);
}

void MainWindow::measure_limits() {
    RooflineChart* chart = roofline_of(panels_);
    const auto& m = bridge_->model();
    if (!chart) return;
    if (!m) {
        show_error(tr("Load a model first: the limits are measured with its thread count."));
        return;
    }
    const int threads = m->threads;
    chart->measure_button()->setEnabled(false);
    statusBar()->showMessage(tr("Measuring this machine's bandwidth and compute peaks with %1 "
                                "threads (fluoro_membw)…")
                                 .arg(threads));
    QPointer<MainWindow> self(this);
    QThreadPool::globalInstance()->start([self, threads] {
        const std::optional<app::MachineLimits> l = app::measure_machine_limits(threads);
        QMetaObject::invokeMethod(qApp, [self, threads, l] {
            if (!self) return;
            RooflineChart* c = roofline_of(self->panels_);
            if (c) c->measure_button()->setEnabled(true);
            if (!l) {
                self->show_error(
                    tr("fluoro_membw was not found beside the program, or failed: "
                       "no roofs."));
                return;
            }
            QSettings().setValue(limits_key(threads), QStringList{QString::number(l->read_gbs),
                                                                  QString::number(l->fma_gflops),
                                                                  QString::number(l->int8_gops)});
            if (c)
                c->set_limits(
                    RooflineChart::Limits{l->read_gbs, l->fma_gflops, l->int8_gops, threads});
            self->statusBar()->showMessage(
                tr("Read %1 GB/s, FMA %2 GFLOP/s, int8 %3 GOP/s with %4 threads")
                    .arg(l->read_gbs, 0, 'f', 1)
                    .arg(l->fma_gflops, 0, 'f', 0)
                    .arg(l->int8_gops, 0, 'f', 0)
                    .arg(threads),
                10000);
        });
    });
}

}  // namespace fluoro::ui
