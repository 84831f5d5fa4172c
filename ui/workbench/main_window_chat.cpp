// MainWindow: sending, stopping, regenerating and editing; the live event fan-out to the chat,
// the panels, the gauge and the timeline.
#include <algorithm>

#include <QComboBox>
#include <QDockWidget>
#include <QListView>
#include <QPlainTextEdit>
#include <QTimer>

#include "panels/event_panel.h"
#include "replay/replay.h"
#include "workbench/chat_view.h"
#include "workbench/context_gauge.h"
#include "workbench/engine_bridge.h"
#include "workbench/main_window.h"
#include "workbench/panel_feeder.h"
#include "workbench/run_timeline.h"
#include "workbench/settings_panel.h"

namespace fluoro::ui {

namespace {

bool chat_relevant(const Event& e) {
    return std::holds_alternative<RunStarted>(e) || std::holds_alternative<TokenEvent>(e) ||
           std::holds_alternative<RunFinished>(e) ||
           std::holds_alternative<ConversationStarted>(e) || std::holds_alternative<StepEvent>(e) ||
           std::holds_alternative<PrefixCacheEvent>(e) || std::holds_alternative<SpecStep>(e);
}

// What a stored conversation continued from the window is stored as.
std::string continued_title(const std::string& title) {
    const std::string suffix = " (continued)";
    const bool already = title.size() >= suffix.size() &&
                         title.compare(title.size() - suffix.size(), suffix.size(), suffix) == 0;
    return already ? title : title + suffix;
}

}  // namespace

void MainWindow::on_events(const std::vector<Event>& batch) {
    std::vector<Event> for_panels;
    std::optional<RunFinished> finished;
    const bool was_outside = outside_live_;
    for (const Event& e : batch) {
        if (const auto* cs = std::get_if<ConversationStarted>(&e)) {
            live_chat_.clear();
            outside_live_ = !own_submissions_.count(cs->submission);
            if (!outside_live_) {
                own_chat_.start(*cs);
                own_new_pending_ = false;
            }
        }
        if (const auto* load = std::get_if<ServerLoadEvent>(&e)) show_server_load(*load);
        if (std::holds_alternative<ModelLoaded>(e) || std::holds_alternative<ModelUnloaded>(e)) {
            own_chat_ = {};  // the engine starts afresh: no conversation is live
            outside_live_ = false;
        }
        if (const auto* err = std::get_if<ErrorEvent>(&e);
            err && last_send_ && err->submission == last_send_->submission &&
            last_send_->conversation != 0 &&
            (outside_live_ || own_chat_.conversation() != last_send_->conversation)) {
            // Refused because a request's conversation (or a fresh model's) took the place of
            // the one it was meant for: ours comes back and the message goes again.
            const QString text = last_send_->text;
            take_own_back();
            send_own(text);
            if (error_text().endsWith(QString::fromStdString(err->message))) show_error({});
        }
        own_chat_.apply(e);
        if (std::holds_alternative<RunStarted>(e)) {
            if (!viewing_live_) show_live();
            feed_panels(for_panels);  // the previous run's tail, then a clean slate
            for_panels.clear();
            reset_panels();
            live_run_.clear();
            timeline_->clear();
        }
        if (chat_relevant(e)) live_chat_.push_back(e);
        if (event_run(e) != 0) live_run_.push_back(e);
        for_panels.push_back(e);
        if (const auto* f = std::get_if<RunFinished>(&e)) finished = *f;
    }
    if (viewing_live_) chat_->consume(batch);
    feed_panels(for_panels);
    if (const RunStats* s = chat_->last_stats(); s && viewing_live_)
        gauge_->set_fill(s->context_used(), s->ctx());
    if (finished) {
        timeline_->set_events(live_run_, tr("live run"));
        editing_.reset();
        update_actions();
        // The writer commits within its linger; list the conversation once it is there.
        QTimer::singleShot(300, this, [this] { refresh_conversations(); });
        emit run_finished(*finished);
    } else if (outside_live_ != was_outside) {
        update_actions();
    }
}

void MainWindow::feed_panels(const std::vector<Event>& batch) {
    feeder_->feed(batch);
}

void MainWindow::reset_panels() {
    feeder_->reset();
}

void MainWindow::select_token(quint64 run, qint64 index) {
    chat_->select_token(run, index);
    feeder_->select_token(run, index);
}

void MainWindow::send_message(const QString& text) {
    input_->setPlainText(text);
    on_send();
}

void MainWindow::on_send() {
    const QString text = input_->toPlainText().trimmed();
    if (text.isEmpty() || !bridge_->model() || bridge_->generating()) return;
    if (!viewing_live_) {
        // A stored conversation on screen: continue it from the run picked (a new live
        // conversation holding that run's branch, stored as a new conversation).
        if (shown_ && !shown_->runs.empty()) {
            const int i = std::clamp(run_picker_->currentIndex(), 0, int(shown_->runs.size()) - 1);
            std::vector<fluoro::ChatMessage> history =
                app::run_history(*shown_, shown_->runs[size_t(i)]);
            if (!history.empty() && history.back().role == "assistant") {
                submit_own(NewConversation{shown_->system_prompt, std::move(history), 0,
                                           continued_title(shown_->title)});
            }
        }
        show_live();
    }
    if (editing_) {
        submit_own(EditAndResend{*editing_, text.toStdString()});
    } else {
        // An API request's conversation took the engine's place: ours comes back first (its own
        // id, so the store goes on with it), then the message goes to it.
        if (outside_live_) take_own_back();
        send_own(text);
    }
    editing_.reset();
    input_->clear();
    show_error({});
    update_actions();
}

void MainWindow::on_regenerate() {
    if (!viewing_live_ || bridge_->generating()) return;
    submit_own(Regenerate{});
}

void MainWindow::on_edit(int message_index, const QString& text) {
    if (!viewing_live_ || bridge_->generating()) return;
    editing_ = message_index;
    input_->setPlainText(text);
    input_->setFocus();
    update_actions();
}

void MainWindow::on_new_chat() {
    if (bridge_->generating()) bridge_->stop();
    editing_.reset();
    if (!viewing_live_) show_live();
    submit_own(NewConversation{settings_->change_settings().system_prompt.value_or("")});
    live_chat_.clear();
    live_run_.clear();
    chat_->clear_messages();
    reset_panels();
    timeline_->clear();
    gauge_->set_fill(0, bridge_->model() ? bridge_->model()->ctx : 0);
    list_view_->clearSelection();
    input_->setFocus();
    update_actions();
}

uint64_t MainWindow::submit_own(Command c) {
    if (const auto* nc = std::get_if<NewConversation>(&c)) {
        // Ours is the engine's conversation from this command on; a new one's id is not known
        // until it starts.
        own_new_pending_ = nc->resume == 0;
        outside_live_ = false;
    }
    const uint64_t n = bridge_->submit(std::move(c));
    own_submissions_.insert(n);
    return n;
}

void MainWindow::send_own(const QString& text) {
    // Meant for our conversation when we know its id; a new one of ours (not started yet) has
    // none to name.
    const uint64_t conversation =
        !own_new_pending_ && own_chat_.following() ? own_chat_.conversation() : 0;
    const uint64_t n = submit_own(SendMessage{text.toStdString(), conversation});
    last_send_ = OwnSend{n, conversation, text};
}

void MainWindow::take_own_back() {
    if (own_chat_.following())
        submit_own(NewConversation{own_chat_.system_prompt(), own_chat_.turns(),
                                   own_chat_.conversation()});
    else
        submit_own(NewConversation{settings_->change_settings().system_prompt.value_or("")});
}

void MainWindow::on_back_to_chat() {
    if (!outside_live_ || bridge_->generating()) return;
    if (!viewing_live_) show_live();
    editing_.reset();
    take_own_back();
    update_actions();
}

void MainWindow::show_live() {
    viewing_live_ = true;
    setWindowTitle(tr("Fluoroscope"));
    shown_.reset();
    shown_runs_.clear();
    run_picker_->clear();
    run_picker_->hide();
    chat_->clear_messages();
    chat_->consume(live_chat_);
    chat_->set_editable(true);
    reset_panels();
    feed_panels(live_run_);
    const bool finished =
        !live_run_.empty() && std::holds_alternative<RunFinished>(live_run_.back());
    if (finished)
        timeline_->set_events(live_run_, tr("live run"));
    else
        timeline_->clear();
    if (const RunStats* s = chat_->last_stats())
        gauge_->set_fill(s->context_used(), s->ctx());
    else
        gauge_->set_fill(0, bridge_->model() ? bridge_->model()->ctx : 0);
    list_view_->clearSelection();
    update_actions();
}

}  // namespace fluoro::ui
