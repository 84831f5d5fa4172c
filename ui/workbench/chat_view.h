// The chat transcript, driven only by events: a ConversationStarted clears it, a RunStarted keeps
// its first kept_messages messages and adds the user's message (not for a regenerate) and an empty
// reply, tokens stream into the reply (the engine's reasoning split: reasoning into a block above
// the answer, "think:RUN" toggles it), RunFinished writes its statistics line. Live and replayed
// runs therefore render the same. Clicking a generated token emits token_clicked; "edit" on a user
// message emits edit_requested with the engine's message index.
#pragma once

#include <QTextBrowser>
#include <map>
#include <vector>

#include "telemetry/events.h"
#include "workbench/chat_html.h"
#include "workbench/run_stats.h"

namespace fluoro::ui {

class ChatView : public QTextBrowser {
    Q_OBJECT
  public:
    explicit ChatView(QWidget* parent = nullptr);

    void consume(const std::vector<Event>& batch);
    void clear_messages();
    // Shown when there are no messages ("Open a model", "Say something").
    void set_placeholder(const QString& text);
    // Whether user messages offer "edit" (only while the view mirrors the engine's conversation).
    void set_editable(bool editable);
    void select_token(uint64_t run, int64_t index);

    const std::vector<ChatMessage>& messages() const { return messages_; }
    // The statistics of the newest run shown (for the context gauge); null before any run.
    const RunStats* last_stats() const { return last_run_ ? &stats_.at(last_run_) : nullptr; }
    int64_t tokens_received() const { return tokens_received_; }
    // Renders now if anything changed since the last render (consume() does it once per batch).
    void render();

  signals:
    void token_clicked(quint64 run, qint64 index);
    void edit_requested(int message_index, const QString& text);

  protected:
    void changeEvent(QEvent* e) override;

  private:
    void apply(const Event& e);
    ChatMessage* reply_of(uint64_t run);
    void on_anchor(const QUrl& url);

    std::vector<ChatMessage> messages_;
    std::map<uint64_t, RunStats> stats_;
    uint64_t last_run_ = 0;
    QString placeholder_;
    ChatRenderOptions opt_;
    int64_t tokens_received_ = 0;
    bool dirty_ = true;
};

}  // namespace fluoro::ui
