// Replay: a stored run streamed back through the same event interface the live engine uses
// (RunStarted, tokens, steps, snapshots, ..., RunFinished on an EventStream), so a view cannot
// tell a past run from a live one. At speed 1 the events keep their recorded spacing, at 2 they
// come twice as fast, at 0 as fast as the consumer takes them.
#pragma once

#include <atomic>
#include <vector>

#include "store/records.h"
#include "telemetry/event_stream.h"

namespace fluoro::app {

// The run's events in recorded order (by time; at equal times in the order the engine emits
// them). `run_id` becomes every event's run. The RunStarted and RunFinished are rebuilt from the
// stored run and the conversation it belongs to.
std::vector<Event> run_events(const ConversationRecord& conversation, const RunRecord& run);

// The messages from the conversation's first one to `message_id`, following parents (root
// first); empty when there is no such message (or the parents loop).
std::vector<const MessageRecord*> message_branch(const ConversationRecord& conversation,
                                                 int64_t message_id);

// The user and assistant turns of the run's branch through its reply: what NewConversation
// takes to continue the conversation from that run.
std::vector<ChatMessage> run_history(const ConversationRecord& conversation, const RunRecord& run);

struct ReplayOptions {
    double speed = 1.0;                         // 0: no waiting
    const std::atomic<bool>* cancel = nullptr;  // stops the replay between events
};

// Pushes the events onto `out` on the calling thread; returns how many were pushed.
size_t replay(const std::vector<Event>& events, EventStream& out, const ReplayOptions& opt = {});

}  // namespace fluoro::app
