#include "runtime/engine_commands.h"

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

}  // namespace fluoro
