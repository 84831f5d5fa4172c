// MainWindow: menus and shortcuts, the theme toggle, and exports — the run's Chrome trace / CSV,
// the conversation's JSON / Markdown (app/export), and PNG/SVG of any panel. Files are written
// on a pool thread; the conversation of a live run is read back from the store by the worker.
#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QPainter>
#include <QPlainTextEdit>
#include <QPointer>
#include <QSettings>
#include <QStatusBar>
#include <QSvgGenerator>
#include <QThreadPool>

#include "common/version.h"
#include "export/csv_export.h"
#include "export/json_export.h"
#include "export/markdown_export.h"
#include "export/run_collector.h"
#include "export/trace_export.h"
#include "panels/event_panel.h"
#include "runtime/engine.h"
#include "workbench/advisor_dialog.h"
#include "workbench/compare_dialog.h"
#include "workbench/engine_bridge.h"
#include "workbench/main_window.h"
#include "workbench/measurements_dialog.h"
#include "workbench/server_panel.h"
#include "workbench/theme.h"

namespace fluoro::ui {

void MainWindow::build_menus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&New chat"), QKeySequence::New, this, &MainWindow::on_new_chat);
    file->addAction(tr("&Open model…"), QKeySequence::Open, this, &MainWindow::on_open_model);
    file->addAction(tr("&Attach to server…"), this, &MainWindow::on_attach_remote)
        ->setToolTip(tr("Chat with a running vLLM, SGLang, llama-server or fluoro serve"));
    recent_menu_ = file->addMenu(tr("&Recent models"));
    rebuild_recent_menu();
    file->addSeparator();
    file->addAction(tr("&Import conversation (JSON)…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Import conversation"), QString(), tr("Conversation JSON (*.json);;All (*)"));
        if (!path.isEmpty()) import_conversation(path);
    });
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    QMenu* chat = menuBar()->addMenu(tr("&Chat"));
    chat->addAction(tr("&Send"), QKeySequence(Qt::CTRL | Qt::Key_Return), this,
                    &MainWindow::on_send);
    auto* send_enter = new QAction(this);  // the keypad's Enter too
    send_enter->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Enter));
    connect(send_enter, &QAction::triggered, this, &MainWindow::on_send);
    addAction(send_enter);
    chat->addAction(tr("S&top"), QKeySequence(Qt::Key_Escape), this, [this] { bridge_->stop(); });
    chat->addAction(tr("&Regenerate"), QKeySequence(Qt::CTRL | Qt::Key_R), this,
                    &MainWindow::on_regenerate);
    chat->addAction(tr("Search &conversations"), QKeySequence::Find, this, [this] {
        search_->setFocus();
        search_->selectAll();
    });
    chat->addSeparator();
    chat->addAction(tr("Com&pare runs…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C), this,
                    [this] { open_compare(); });
    chat->addAction(tr("Prompt cache &advisor…"), this, [this] { open_advisor(); });

    QMenu* measure = menuBar()->addMenu(tr("&Measure"));
    for (const app::MeasureKind k : app::kMeasureKinds) {
        const std::string_view title = app::measure_kind_title(k);
        QAction* a =
            measure->addAction(QString::fromUtf8(title.data(), qsizetype(title.size())) + tr("…"),
                               this, [this, k] { open_measurements()->ask(k); });
        a->setObjectName(QString("action_measure_") +
                         QString::fromUtf8(app::measure_kind_name(k).data()));
    }
    measure->addSeparator();
    measure->addAction(tr("Stored &measurements…"), this, [this] { open_measurements(); });

    QMenu* server = menuBar()->addMenu(tr("&Server"));
    QAction* serving = server->addAction(tr("&Serve OpenAI-compatible API"));
    serving->setObjectName("action_serve");
    serving->setCheckable(true);
    connect(serving, &QAction::triggered, this, [this, serving](bool on) {
        if (const QString err = server_panel_->set_serving(on); !err.isEmpty()) {
            serving->setChecked(false);
            show_error(tr("API server not started: %1").arg(err));
        }
    });
    connect(server_panel_, &ServerPanel::serving_changed, serving, &QAction::setChecked);
    server->addAction(tr("Server &panel"), this, [this] {
        if (auto* d = findChild<QDockWidget*>("dock_server")) {
            d->show();
            d->raise();
        }
    });

    QMenu* view = menuBar()->addMenu(tr("&View"));
    dark_action_ = view->addAction(tr("&Dark theme"));
    dark_action_->setCheckable(true);
    dark_action_->setChecked(QSettings().value("dark_theme", false).toBool());
    connect(dark_action_, &QAction::toggled, this, [this](bool dark) { set_dark(dark); });
    // Telemetry level trace instead of full: every op of every step, for the profiler's timeline
    // and the exported Chrome trace; remembered.
    QAction* trace = view->addAction(tr("&Trace every operation"));
    trace->setObjectName("trace_ops");
    trace->setCheckable(true);
    trace->setToolTip(
        tr("Record each step's every operation and the worker threads' spans "
           "(telemetry level trace): the profiler's Timeline tab and the Chrome "
           "trace export show them"));
    const auto apply_trace = [this](bool on) {
        bridge_->engine().set_telemetry_level(on ? TelemetryLevel::Trace : TelemetryLevel::Full);
    };
    trace->setChecked(QSettings().value("trace_ops", false).toBool());
    apply_trace(trace->isChecked());
    connect(trace, &QAction::toggled, this, [apply_trace](bool on) {
        QSettings().setValue("trace_ops", on);
        apply_trace(on);
    });
    view->addSeparator();
    for (QDockWidget* d : findChildren<QDockWidget*>()) view->addAction(d->toggleViewAction());
    view->addSeparator();
    QAction* reset = view->addAction(tr("&Reset layout"), this, &MainWindow::reset_layout);
    reset->setObjectName("reset_layout");
    reset->setToolTip(tr("Every panel back where a new window puts it"));

    QMenu* exp = menuBar()->addMenu(tr("&Export"));
    exp->addAction(tr("Run as Chrome &trace (Perfetto)…"), this, [this] { export_run("trace"); });
    exp->addAction(tr("Run tokens as &CSV…"), this, [this] { export_run("csv"); });
    exp->addAction(tr("Conversation as &JSON…"), this, [this] { export_run("json"); });
    exp->addAction(tr("Conversation as &Markdown…"), this, [this] { export_run("markdown"); });
    exp->addSeparator();
    QMenu* images = exp->addMenu(tr("&Panel image (PNG/SVG)"));
    for (size_t i = 0; i < panels_.size(); ++i) {
        EventPanel* p = panels_[i];
        QDockWidget* d = panel_docks_[i];
        images->addAction(p->title() + tr("…"), this, [this, p, d] { export_panel_image(p, d); });
    }
    images->setEnabled(!panels_.empty());
    auto* export_key = new QAction(this);
    export_key->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    connect(export_key, &QAction::triggered, this,
            [this, exp] { exp->popup(mapToGlobal(QPoint(width() / 3, height() / 3))); });
    addAction(export_key);

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About Fluoroscope"), this, [this] {
        QMessageBox::about(
            this, tr("About Fluoroscope"),
            tr("<b>Fluoroscope %1</b><p>Run LLMs locally and watch inference live.")
                .arg(QString::fromUtf8(app::version().data(), qsizetype(app::version().size()))));
    });
}

void MainWindow::set_dark(bool dark, bool remember) {
    apply_theme(dark);
    if (remember) QSettings().setValue("dark_theme", dark);
    if (dark_action_ && dark_action_->isChecked() != dark) {
        const QSignalBlocker block(dark_action_);
        dark_action_->setChecked(dark);
    }
}

std::optional<app::RunRecord> MainWindow::current_run() const {
    if (!viewing_live_ && shown_ && !shown_->runs.empty()) {
        const int i = std::clamp(run_picker_->currentIndex(), 0, int(shown_->runs.size()) - 1);
        return shown_->runs[size_t(i)];
    }
    if (live_run_.empty()) return std::nullopt;
    app::RunCollector c;
    for (const Event& e : live_run_) c.add(e);
    return c.run();
}

AdvisorDialog* MainWindow::open_advisor() {
    if (!advisor_) {
        advisor_ = new AdvisorDialog(store_.get(), this);
        advisor_->setAttribute(Qt::WA_DeleteOnClose, false);
    }
    if (const auto& m = bridge_->model())
        advisor_->set_model(QFileInfo(QString::fromStdString(m->path)).fileName());
    advisor_->show();
    advisor_->raise();
    advisor_->activateWindow();
    advisor_->refresh();
    return advisor_;
}

MeasurementsDialog* MainWindow::open_measurements() {
    if (!measurements_) {
        measurements_ = new MeasurementsDialog(store_.get(), this);
        measurements_->setAttribute(Qt::WA_DeleteOnClose, false);
    }
    const auto& m = bridge_->model();
    measurements_->set_model(m ? QString::fromStdString(m->path) : QString());
    measurements_->show();
    measurements_->raise();
    measurements_->activateWindow();
    return measurements_;
}

CompareDialog* MainWindow::open_compare() {
    if (!compare_) {
        compare_ = new CompareDialog(store_.get(), this);
        compare_->setAttribute(Qt::WA_DeleteOnClose, false);
    }
    compare_->show();
    compare_->raise();
    compare_->activateWindow();
    if (!store_) return compare_;
    // The shown stored run and the one before it; live: the newest two of the live conversation
    // once the writer has committed it.
    if (!viewing_live_ && shown_ && !shown_->runs.empty()) {
        const int i = std::clamp(run_picker_->currentIndex(), 0, int(shown_->runs.size()) - 1);
        compare_->preset(shown_->id, shown_->runs[size_t(i)].id);
    } else if (!live_run_.empty()) {
        QPointer<CompareDialog> dialog = compare_;
        with_conversation([dialog](const ConversationPtr& c) {
            if (dialog && c) dialog->preset(c->id);
        });
    }
    return compare_;
}

void MainWindow::with_conversation(std::function<void(const ConversationPtr&)> f) {
    if (!viewing_live_ && shown_) return f(shown_);
    app::StoreWriter* w = bridge_->writer();
    if (!w || !store_) {
        show_error(tr("Conversation exports read the session store, and there is none."));
        return;
    }
    QPointer<MainWindow> self(this);
    // The window waits for the pool before it destroys the writer (~MainWindow).
    QThreadPool::globalInstance()->start([self, w, f = std::move(f)] {
        w->flush();  // the live run's last events are on disk before it is read back
        const int64_t id = w->last_conversation_id();
        QMetaObject::invokeMethod(qApp, [self, id, f] {
            if (self && self->store_) self->pending_exports_[self->store_->load(id)] = f;
        });
    });
}

namespace {

// Writes text to path on a pool thread; reports to the status bar (or the error banner) and as
// MainWindow::exported.
void write_async(QPointer<MainWindow> window, const QString& path, std::string text) {
    QThreadPool::globalInstance()->start([window, path, text = std::move(text)] {
        QFile f(path);
        const bool ok = f.open(QIODevice::WriteOnly | QIODevice::Truncate) &&
                        f.write(text.data(), qint64(text.size())) == qint64(text.size());
        const QString why = f.errorString();
        f.close();
        QMetaObject::invokeMethod(qApp, [window, path, ok, why] {
            if (window) window->report_export(path, ok, why);
        });
    });
}

}  // namespace

namespace {

struct ExportKind {
    QString name, filter, suffix;
};

ExportKind export_kind(const QString& format) {
    if (format == "trace")
        return {QObject::tr("Chrome trace"), QObject::tr("Trace JSON (*.json)"), ".trace.json"};
    if (format == "csv") return {QObject::tr("Tokens CSV"), QObject::tr("CSV (*.csv)"), ".csv"};
    if (format == "json")
        return {QObject::tr("Conversation JSON"), QObject::tr("JSON (*.json)"), ".json"};
    return {QObject::tr("Markdown"), QObject::tr("Markdown (*.md)"), ".md"};
}

}  // namespace

void MainWindow::export_run(const QString& format) {
    const ExportKind k = export_kind(format);
    const QString path = QFileDialog::getSaveFileName(this, tr("Export %1").arg(k.name),
                                                      "fluoroscope" + k.suffix, k.filter);
    if (!path.isEmpty()) export_to(format, path);
}

void MainWindow::export_to(const QString& format, const QString& path) {
    const bool per_run = format == "trace" || format == "csv";
    std::optional<app::RunRecord> run;
    if (per_run && !(run = current_run())) {
        show_error(
            tr("There is no run to export yet: send a message or pick a stored conversation."));
        emit exported(path, false);
        return;
    }
    if (!per_run && viewing_live_ && live_chat_.empty()) {
        show_error(tr("There is no conversation to export yet."));
        emit exported(path, false);
        return;
    }
    QPointer<MainWindow> self(this);
    if (per_run) {
        write_async(
            self, path,
            format == "trace" ? app::run_to_chrome_trace(*run).dump(1) : app::run_tokens_csv(*run));
        return;
    }
    with_conversation([self, path, format](const ConversationPtr& c) {
        write_async(self, path,
                    format == "json" ? app::conversation_to_json(*c).dump(2)
                                     : app::conversation_markdown(*c));
    });
}

void MainWindow::report_export(const QString& path, bool ok, const QString& why) {
    if (ok)
        statusBar()->showMessage(tr("Exported %1").arg(path), 8000);
    else
        show_error(tr("Could not write %1: %2").arg(path, why));
    emit exported(path, ok);
}

void MainWindow::export_panel_image(EventPanel* panel, QDockWidget* dock) {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export %1").arg(panel->title()),
                                                      "fluoroscope-" + panel->panel_id() + ".png",
                                                      tr("PNG image (*.png);;SVG image (*.svg)"));
    if (!path.isEmpty()) export_panel_image_to(panel, dock, path);
}

bool MainWindow::export_panel_image_to(EventPanel* panel, QDockWidget* dock, const QString& path) {
    bool ok = false;
    if (path.endsWith(".svg", Qt::CaseInsensitive)) {
        QSvgGenerator svg;
        svg.setFileName(path);
        svg.setSize(panel->size());
        svg.setViewBox(panel->rect());
        svg.setTitle(panel->title());
        QPainter painter(&svg);
        panel->render(&painter);
        ok = painter.end();
    } else {
        ok = dock->grab().save(path, "PNG");
    }
    report_export(path, ok, tr("cannot write the image"));
    return ok;
}

}  // namespace fluoro::ui
