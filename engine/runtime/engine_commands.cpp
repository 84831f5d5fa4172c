#include "runtime/engine_commands.h"

#include <string>

#include "core/error.h"

namespace fluoro {
namespace {

struct Namer {
    std::string_view operator()(const LoadModel&) const { return "load_model"; }
    std::string_view operator()(const UnloadModel&) const { return "unload_model"; }
    std::string_view operator()(const NewConversation&) const { return "new_conversation"; }
    std::string_view operator()(const SendMessage&) const { return "send"; }
    std::string_view operator()(const Regenerate&) const { return "regenerate"; }
    std::string_view operator()(const EditAndResend&) const { return "edit"; }
    std::string_view operator()(const ChangeSettings&) const { return "settings"; }
    std::string_view operator()(const SetAttentionCapture&) const { return "attention_capture"; }
    std::string_view operator()(const Complete&) const { return "complete"; }
    std::string_view operator()(const ComputeLogitLens&) const { return "logit_lens"; }
    std::string_view operator()(const ComputeAttentionOverview&) const {
        return "attention_overview";
    }
};

}  // namespace

std::string_view command_name(const Command& c) {
    return std::visit(Namer{}, c);
}

void check_complete(const Complete& c) {
    const std::vector<ChatMessage>& m = c.messages;
    const size_t first = !m.empty() && m.front().role == "system" ? 1 : 0;
    if (m.size() <= first || (m.back().role != "user" && m.back().role != "tool"))
        throw Error("a completion needs messages that end with a user message (or tool results)");
    for (size_t i = first; i < m.size(); ++i)
        if (m[i].role != "user" && m[i].role != "assistant" && m[i].role != "tool")
            throw Error("message " + std::to_string(i) + " has role '" + m[i].role +
                        "': only the first message may be 'system', the others 'user', "
                        "'assistant' or 'tool'");
    if (c.raw && m.size() != 1)
        throw Error("a raw completion takes one user message, its text the whole prompt (got " +
                    std::to_string(m.size()) + " messages)");
    if (c.max_tokens && *c.max_tokens < 1)
        throw Error("max_tokens must be at least 1, not " + std::to_string(*c.max_tokens));
    if (c.sampling) c.sampling->validate();
}

}  // namespace fluoro
