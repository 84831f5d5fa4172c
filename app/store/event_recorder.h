// Turns the engine's telemetry events into store rows: a RunStarted opens the conversation (first
// time it is seen, with the turns its ConversationStarted brought: a continued conversation's or
// an API request's history), adds the user message and an empty, incomplete assistant message
// and the run;
// tokens, steps, snapshots and KV evictions become rows; RunFinished completes the message and the
// run. The assistant message's text is kept current at the end of every batch, so a process killed
// mid-answer leaves the answer so far, marked incomplete. Runs on the caller's thread, inside the
// caller's transaction (StoreWriter batches).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "store/store.h"
#include "telemetry/events.h"

namespace fluoro::app {

class EventRecorder {
  public:
    explicit EventRecorder(Store& store) : store_(store) {}
    void apply(const Event& e);
    // Writes the text generated so far into every unfinished assistant message.
    void end_batch();
    // The writer's transaction boundaries: checkpoint() before a batch, rollback() when the batch's
    // transaction failed, so what the recorder believes matches what the file holds.
    void checkpoint();
    void rollback();
    // Store ids of the last recorded run and its conversation (0 when none).
    int64_t last_run_id() const { return last_run_id_; }
    int64_t last_conversation_id() const { return last_conversation_id_; }

  private:
    struct Conversation {
        int64_t id = 0;
        std::vector<int64_t> path;         // store ids of the messages on the current branch
        std::vector<ChatMessage> history;  // ConversationStarted's turns, until it is stored
        std::string title;                 // ConversationStarted's, until it is stored
    };
    struct Run {
        int64_t id = 0, message = 0, conversation_key = 0, kept = 0;
        bool remote = false;  // a remote server's run: its token ids name no vocabulary
        std::string text;
        bool dirty = false;
    };

    void on_start(const RunStarted& e);
    void on_finish(const RunFinished& e);
    Run* run(uint64_t engine_run);
    std::string model_hash(const std::string& path);

    struct State {
        std::map<uint64_t, Conversation> conversations;  // by engine conversation id
        std::map<uint64_t, Run> runs;                    // by engine run id, while unfinished
    };

    Store& store_;
    State state_, saved_;
    int64_t last_run_id_ = 0, last_conversation_id_ = 0;
};

}  // namespace fluoro::app
