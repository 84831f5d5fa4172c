// The commands an Engine executes on its thread, as plain values. Cancel is not a command: it
// must act at once, so it is a method of Engine (engine.h) that bypasses the queue.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "kv/kv_cache.h"
#include "sampling/sampling_params.h"

namespace fluoro {

struct ModelSettings {
    int threads = 0;      // 0 = physical cores
    int64_t ctx = 4096;   // tokens of context (clamped to the model's trained context)
    int64_t batch = 512;  // tokens per prefill step
    KvType kv_type = KvType::F16;
};

// Replaces the loaded model (if any); the conversation starts afresh.
struct LoadModel {
    std::filesystem::path path;
    ModelSettings settings;
};
struct UnloadModel {};
// Forgets the current conversation and starts a new one.
struct NewConversation {
    std::string system_prompt;
};
// Adds a user message to the conversation (a new one when none) and generates the reply.
struct SendMessage {
    std::string text;
};
// Generates the last reply again (the conversation must end with an assistant message).
struct Regenerate {};
// Replaces user message `message_index` (0-based over the conversation's messages, system prompt
// not counted) with `text`, drops everything after it and generates the reply.
struct EditAndResend {
    int64_t message_index = 0;
    std::string text;
};
// Changes what is set; applies from the next run.
struct ChangeSettings {
    std::optional<SamplingParams> sampling;  // validated; the random stream is kept
    std::optional<int64_t> max_tokens;       // tokens per reply at most (>= 1)
    std::optional<std::string> system_prompt;
};

using Command = std::variant<LoadModel, UnloadModel, NewConversation, SendMessage, Regenerate,
                             EditAndResend, ChangeSettings>;

// "load_model", "unload_model", "new_conversation", "send", "regenerate", "edit", "settings".
std::string_view command_name(const Command& c);

}  // namespace fluoro
