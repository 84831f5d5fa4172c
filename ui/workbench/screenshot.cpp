#include "workbench/screenshot.h"

#include <QApplication>
#include <QChartView>
#include <QDockWidget>
#include <QTabWidget>
#include <QTimer>
#include <iostream>

#include "panels/event_panel.h"
#include "panels/line_chart.h"
#include "workbench/chat_view.h"
#include "workbench/engine_bridge.h"
#include "workbench/launch.h"
#include "workbench/main_window.h"
#include "workbench/measure_runner.h"
#include "workbench/measurements_dialog.h"
#include "workbench/panel_feeder.h"

namespace fluoro::ui {

namespace {

void fail(const QString& why) {
    std::cerr << "fluoroscope --screenshot: " << why.toStdString() << '\n';
    QApplication::exit(1);
}

// Picks a token of the newest reply (a third of the way in) so the inspector has something.
void select_some_token(MainWindow& w) {
    const auto& msgs = w.chat()->messages();
    for (auto it = msgs.rbegin(); it != msgs.rend(); ++it) {
        if (it->role != QLatin1String("assistant") || it->pieces.empty()) continue;
        const auto& p = it->pieces[it->pieces.size() / 3];
        if (p.token >= 0) {
            w.chat()->select_token(it->run, p.token);
            w.panel_feeder()->select_token(it->run, p.token);
        }
        return;
    }
}

void grab_and_quit(MainWindow& w, const LaunchOptions& opt) {
    select_some_token(w);
    // Raise the dock first: a panel in a background tab is fed (caught up) only once it is shown.
    // Then feed every panel what is queued, and give line charts, which put their points on the
    // chart from a timer (LineChart::kThrottleMs), time to do so before grabbing.
    QTimer::singleShot(500, &w, [&w, opt] {
        QWidget* target = &w;
        if (!opt.panel.isEmpty()) {
            QDockWidget* dock = w.panel_dock(opt.panel);
            if (!dock)
                dock = w.findChild<QDockWidget*>("dock_" + opt.panel);  // model, settings, ...
            if (!dock) return fail(QStringLiteral("no panel '%1'").arg(opt.panel));
            dock->show();
            dock->raise();
            target = dock;
        }
        QTimer::singleShot(100, &w, [&w, opt, target] {
            w.panel_feeder()->flush();
            QTimer::singleShot(LineChart::kThrottleMs + 150, &w, [&w, opt, target] {
                w.panel_feeder()->flush();
                if (!target->grab().save(opt.screenshot))
                    return fail("cannot write " + opt.screenshot);
                std::cout << "wrote " << opt.screenshot.toStdString() << '\n';
                QApplication::exit(0);
            });
        });
    });
}

// --measure: opens the measurements window on the loaded model, runs the measurement, and renders
// that window once the result is stored and drawn.
void start_measurement(MainWindow& w, const LaunchOptions& opt, app::MeasureKind kind) {
    static bool started = false;  // model_changed comes again on later events
    if (!w.bridge().model() || started) return;
    started = true;
    MeasurementsDialog* d = w.open_measurements();
    QObject::connect(d, &MeasurementsDialog::measured, d, [d, opt] {
        QTimer::singleShot(300, d, [d, opt] {
            if (!d->grab().save(opt.screenshot)) return fail("cannot write " + opt.screenshot);
            std::cout << "wrote " << opt.screenshot.toStdString() << '\n';
            // Every plot too, each in its own file named after its title:
            // shot.png -> shot-next-token-s-cost-with-and-without-the-kv-cache.png, ...
            const QString base = opt.screenshot.endsWith(".png", Qt::CaseInsensitive)
                                     ? opt.screenshot.chopped(4)
                                     : opt.screenshot;
            for (int i = 0; i < d->tabs()->count(); ++i) {
                auto* chart = qobject_cast<QChartView*>(d->tabs()->widget(i));
                if (!chart) continue;
                d->tabs()->setCurrentIndex(i);
                QString slug;
                for (const QChar c : d->tabs()->tabText(i).toLower())
                    slug += c.isLetterOrNumber() ? c : QChar('-');
                while (slug.contains("--")) slug.replace("--", "-");
                const QString file = base + "-" + slug + ".png";
                chart->resize(720, 420);
                if (!chart->grab().save(file)) return fail("cannot write " + file);
                std::cout << "wrote " << file.toStdString() << '\n';
            }
            QApplication::exit(0);
        });
    });
    QObject::connect(d, &MeasurementsDialog::ended, d, [d] {
        if (!d->runner()->running() && d->status_text().startsWith("Failed"))
            fail(d->status_text());
    });
    if (!d->start(kind, opt.measure_params)) fail(d->status_text());
}

}  // namespace

int take_screenshot(MainWindow& window, const LaunchOptions& opt, const QString& model) {
    window.resize(1600, 1000);
    window.show();
    QTimer::singleShot(opt.timeout_s * 1000, &window,
                       [] { fail("timed out waiting for the generation"); });
    if (opt.demo) {
        try {
            window.show_record(load_demo_run(), QObject::tr("Demo run"));
        } catch (const std::exception& e) {
            fail(QString::fromStdString(e.what()));
            return 1;
        }
        QTimer::singleShot(0, &window, [&window, opt] { grab_and_quit(window, opt); });
        return QApplication::exec();
    }
    if (model.isEmpty()) {
        fail("no model: pass MODEL.gguf or run scripts/fetch-model.sh");
        return 1;
    }
    SamplingParams sp;
    sp.seed = 42;
    ChangeSettings cs;
    cs.sampling = sp;
    cs.max_tokens = opt.max_tokens;
    window.bridge().submit(cs);
    // Attention of one layer (every head, every query row of each step) and the sparsity
    // readouts, so the attention panel has something to show.
    SetAttentionCapture capture;
    AttentionCaptureSpec spec;
    spec.layer = 0;
    spec.head = -1;
    spec.rows = 0;
    capture.specs.push_back(spec);
    capture.stats = true;
    window.bridge().submit(capture);
    QObject::connect(&window.bridge(), &EngineBridge::error, &window, [](const QString& m) {
        if (m.startsWith("load_model") || m.startsWith("send")) fail(m);
    });
    if (!opt.measure.isEmpty()) {
        const auto kind = app::parse_measure_kind(opt.measure.toStdString());
        if (!kind) {
            QString known;
            for (const app::MeasureKind k : app::kMeasureKinds)
                known += (known.isEmpty() ? "" : ", ") +
                         QString::fromStdString(std::string(app::measure_kind_name(k)));
            fail("unknown --measure '" + opt.measure + "' (" + known + ")");
            return 1;
        }
        QObject::connect(&window.bridge(), &EngineBridge::model_changed, &window,
                         [&window, opt, kind = *kind] { start_measurement(window, opt, kind); });
    } else {
        QObject::connect(&window.bridge(), &EngineBridge::model_changed, &window, [&window, opt] {
            if (window.bridge().model() && window.chat()->messages().empty())
                window.send_message(opt.prompt);
        });
        QObject::connect(&window, &MainWindow::run_finished, &window,
                         [&window, opt](const RunFinished&) { grab_and_quit(window, opt); });
    }
    window.open_model(model);
    return QApplication::exec();
}

}  // namespace fluoro::ui
