#include "session/conversation_mirror.h"

#include <algorithm>

namespace fluoro::app {

void ConversationMirror::start(const ConversationStarted& started) {
    conversation_ = started.conversation;
    system_prompt_ = started.system_prompt;
    turns_ = started.messages;
    running_.clear();
}

void ConversationMirror::apply(const Event& e) {
    if (const auto* s = std::get_if<RunStarted>(&e)) {
        if (conversation_ != 0 && s->conversation == conversation_)
            running_[s->run] = {s->kept_messages, s->kind, s->user_text};
    } else if (const auto* f = std::get_if<RunFinished>(&e)) {
        const auto it = running_.find(f->run);
        if (it == running_.end()) return;
        // As the engine: the turns change when the run ends, and not when it failed.
        if (f->stop != "error") {
            const Pending& p = it->second;
            turns_.resize(std::min(turns_.size(), size_t(std::max<int64_t>(0, p.kept))));
            if (p.kind != RunKind::Regenerate) turns_.push_back({"user", p.user_text});
            turns_.push_back({"assistant", f->text});
        }
        running_.erase(it);
    }
}

const std::vector<ChatMessage>& ConversationMirror::turns() const {
    return turns_;
}

}  // namespace fluoro::app
