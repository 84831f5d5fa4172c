// MainWindow: the stored conversations — listing, search, rename, delete — and showing one of
// them (its runs replayed through app/replay into the chat, the panels and the timeline). All
// SQLite work happens on the store worker's thread.
#include <QComboBox>
#include <QLineEdit>
#include <QListView>
#include <QMessageBox>

#include "replay/replay.h"
#include "workbench/chat_view.h"
#include "workbench/context_gauge.h"
#include "workbench/conversation_list_model.h"
#include "workbench/main_window.h"
#include "workbench/run_timeline.h"

namespace fluoro::ui {

void MainWindow::refresh_conversations() {
    if (store_) list_job_ = store_->list(search_->text().trimmed());
}

void MainWindow::on_conversation_activated(const QModelIndex& index) {
    if (!store_ || !index.isValid()) return;
    load_job_ = store_->load(list_model_->id_at(index.row()));
}

void MainWindow::on_loaded(quint64 job, const ConversationPtr& c) {
    if (auto it = pending_exports_.find(job); it != pending_exports_.end()) {
        auto f = std::move(it->second);
        pending_exports_.erase(it);
        f(c);
        return;
    }
    if (job == import_job_) refresh_conversations();  // the imported one joins the list
    if (job != load_job_ || !c) return;               // a newer pick is on its way
    show_record(c, QString::fromStdString(c->title));
}

void MainWindow::import_conversation(const QString& path) {
    if (!store_) {
        show_error(tr("No session store is open: nothing can be imported."));
        return;
    }
    load_job_ = import_job_ = store_->import_file(path);
}

void MainWindow::show_record(ConversationPtr conversation, const QString& label) {
    viewing_live_ = false;
    editing_.reset();
    shown_ = std::move(conversation);
    shown_runs_.clear();
    for (const auto& run : shown_->runs) shown_runs_.push_back(app::run_events(*shown_, run));
    chat_->clear_messages();
    chat_->set_editable(false);
    for (const auto& events : shown_runs_) chat_->consume(events);
    if (shown_runs_.empty()) chat_->set_placeholder(tr("“%1” has no recorded runs.").arg(label));
    run_picker_->clear();
    run_picker_->setVisible(!shown_runs_.empty());
    for (size_t i = 0; i < shown_runs_.size(); ++i)
        run_picker_->addItem(tr("run %1 of %2").arg(i + 1).arg(shown_runs_.size()));
    if (!shown_runs_.empty()) {
        run_picker_->setCurrentIndex(int(shown_runs_.size()) - 1);
        show_stored_run(int(shown_runs_.size()) - 1);
    } else {
        reset_panels();
        timeline_->clear();
    }
    setWindowTitle(tr("%1 — Fluoroscope").arg(label));
    update_actions();
    emit conversation_shown();
}

void MainWindow::show_stored_run(int run_index) {
    if (run_index < 0 || size_t(run_index) >= shown_runs_.size()) return;
    const auto& events = shown_runs_[size_t(run_index)];
    reset_panels();
    feed_panels(events);
    timeline_->set_events(events, tr("stored run %1").arg(shown_->runs[size_t(run_index)].id));
    RunStats stats;
    for (const Event& e : events) stats.add(e);
    gauge_->set_fill(stats.context_used(), stats.ctx());
}

void MainWindow::on_rename() {
    const QModelIndex i = list_view_->currentIndex();
    if (i.isValid()) list_view_->edit(i);
}

void MainWindow::on_delete() {
    const QModelIndex i = list_view_->currentIndex();
    if (!store_ || !i.isValid()) return;
    const qint64 id = list_model_->id_at(i.row());
    const auto answer = QMessageBox::question(
        this, tr("Delete conversation"),
        tr("Delete “%1” and every run recorded in it?").arg(i.data().toString()));
    if (answer != QMessageBox::Yes) return;
    if (shown_ && shown_->id == id) show_live();
    store_->remove(id);
}

}  // namespace fluoro::ui
