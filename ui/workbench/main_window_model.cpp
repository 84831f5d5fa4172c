// MainWindow: opening models (file dialog, recent list in QSettings), the model card and the
// status line of the loaded model.
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QSettings>
#include <QStatusBar>
#include <QStringList>

#include "core/error.h"
#include "settings/settings.h"
#include "store/data_dir.h"
#include "workbench/chat_view.h"
#include "workbench/context_gauge.h"
#include "workbench/engine_bridge.h"
#include "workbench/main_window.h"
#include "workbench/measurements_dialog.h"
#include "workbench/model_card.h"
#include "workbench/server_panel.h"
#include "workbench/settings_panel.h"

namespace fluoro::ui {

namespace {
constexpr int kMaxRecent = 8;
}

void MainWindow::on_open_model() {
    QSettings st;
    const QString start = QFileInfo(st.value("last_model").toString()).absolutePath();
    const QString path = QFileDialog::getOpenFileName(this, tr("Open a GGUF model"), start,
                                                      tr("GGUF models (*.gguf);;All files (*)"));
    if (!path.isEmpty()) open_model(path);
}

void MainWindow::open_model(const QString& path) {
    if (bridge_->generating()) bridge_->stop();
    pending_model_ = QFileInfo(path).absoluteFilePath();
    show_error({});
    model_label_->setText(tr("loading %1…").arg(QFileInfo(path).fileName()));
    card_->show_model(pending_model_.toStdString());
    ModelSettings ms = settings_->model_settings();
    if (settings_->keep_prefix_cache()) {
        try {
            ms.prefix_cache_file =
                app::prefix_cache_file_for(pending_model_.toStdString(), kv_types_name(ms.kv_type),
                                           backend_kind_name(ms.backend));
        } catch (const Error& e) {  // no usable HOME: the cache still works, just not on disk
            show_error(QString::fromStdString(e.what()));
        }
    }
    bridge_->load_model(pending_model_.toStdString(), ms);
    update_actions();
}

void MainWindow::on_model_changed() {
    const auto& m = bridge_->model();
    const bool remote = bridge_->attached();
    server_load_label_->setVisible(remote && !server_load_label_->text().isEmpty());
    if (measurements_)
        measurements_->set_model(m && !remote ? QString::fromStdString(m->path) : QString());
    show_stored_limits();
    if (m && remote) {
        saw_model_ = true;
        const QString url = QString::fromStdString(m->path), name = QString::fromStdString(m->name);
        model_label_->setText(tr("attached: %1 at %2").arg(name, url));
        model_label_->setToolTip(QString::fromStdString(m->chat_template_note));
        card_->show_remote(url, name);
        chat_->set_placeholder(
            tr("Attached to %1 (%2). Type a message below and press Ctrl+Return.").arg(url, name));
        gauge_->set_fill(0, 0);
    } else if (remote) {
        model_label_->setText(tr("attaching…"));
    } else if (m) {
        saw_model_ = true;
        // "template jinja": the file's own chat template renders the prompts; a family name
        // with "*" is a fallback, and the note (tooltip, status bar) says why.
        model_label_->setText(tr("%1 · %2 · %3 · ctx %4 · %5 threads · KV %6 · template %7")
                                  .arg(QString::fromStdString(m->name),
                                       QString::fromStdString(m->arch),
                                       QString::fromStdString(m->backend))
                                  .arg(m->ctx)
                                  .arg(m->threads)
                                  .arg(QString::fromStdString(m->kv_type),
                                       QString::fromStdString(m->chat_template) +
                                           (m->chat_template_fallback ? "*" : "")));
        const QString path = QFileInfo(QString::fromStdString(m->path)).absoluteFilePath();
        if (path == pending_model_)
            remember_model(path);
        else
            card_->show_model(m->path);  // the new one failed to load; this one stays
        chat_->set_placeholder(tr("%1 is ready. Type a message below and press Ctrl+Return.")
                                   .arg(QString::fromStdString(m->name)));
        if (chat_->messages().empty()) gauge_->set_fill(0, m->ctx);
        // How chats are rendered when it is not the file's own template, and what became of the
        // persisted prefix cache (restored, or why its file was ignored).
        QStringList notes;
        if (!m->chat_template_note.empty())
            notes << tr("Chat template: %1").arg(QString::fromStdString(m->chat_template_note));
        if (!m->prefix_cache_note.empty()) notes << QString::fromStdString(m->prefix_cache_note);
        model_label_->setToolTip(notes.join('\n'));
        if (!notes.isEmpty()) statusBar()->showMessage(notes.join(" · "), 15000);
        if (serve_on_load_) serve_when_loaded(*serve_on_load_);
    } else {
        model_label_->setText(tr("no model"));
        chat_->set_placeholder(tr("Open a model (Ctrl+O) to start chatting."));
    }
    update_actions();
}

void MainWindow::serve_when_loaded(int port) {
    serve_on_load_ = port;
    if (!bridge_->model()) return;
    serve_on_load_.reset();
    server_panel_->set_port(port);
    if (const QString err = server_panel_->set_serving(true); !err.isEmpty())
        show_error(tr("API server not started: %1").arg(err));
}

void MainWindow::remember_model(const QString& path) {
    QSettings st;
    QStringList recent = st.value("recent_models").toStringList();
    recent.removeAll(path);
    recent.prepend(path);
    while (recent.size() > kMaxRecent) recent.removeLast();
    st.setValue("recent_models", recent);
    st.setValue("last_model", path);
    rebuild_recent_menu();
}

void MainWindow::rebuild_recent_menu() {
    recent_menu_->clear();
    const QStringList recent = QSettings().value("recent_models").toStringList();
    for (const QString& path : recent)
        recent_menu_
            ->addAction(QFileInfo(path).fileName(), this, [this, path] { open_model(path); })
            ->setToolTip(path);
    recent_menu_->setEnabled(!recent.isEmpty());
}

}  // namespace fluoro::ui
