// One engine conversation's system prompt and turns, rebuilt from its events as the engine keeps
// them (at a run's end: RunStarted's kept_messages, the user's text unless regenerating, the
// reply; a failed run changes nothing), so that it can be handed back to NewConversation. The
// workbench keeps its own chat this way while API requests take the engine's live conversation, and
// starts it again before the user's next message.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "telemetry/events.h"

namespace fluoro::app {

class ConversationMirror {
  public:
    // Follows `started` from now on (its turns included), forgetting the one before.
    void start(const ConversationStarted& started);
    // Runs of the followed conversation update the turns; every other event is ignored.
    void apply(const Event& e);

    bool following() const { return conversation_ != 0; }
    uint64_t conversation() const { return conversation_; }
    const std::string& system_prompt() const { return system_prompt_; }
    // The turns as the engine holds them: a run changes them when it finishes (a failed one
    // not at all), so they end with a reply or are empty.
    const std::vector<ChatMessage>& turns() const;

  private:
    uint64_t conversation_ = 0;
    std::string system_prompt_;
    std::vector<ChatMessage> turns_;
    struct Pending {
        int64_t kept = 0;
        RunKind kind = RunKind::Send;
        std::string user_text;
    };
    std::map<uint64_t, Pending> running_;  // by engine run, until it finishes
};

}  // namespace fluoro::app
