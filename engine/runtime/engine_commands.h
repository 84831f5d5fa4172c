// The commands an Engine executes on its thread, as plain values. Cancel is not a command: it
// must act at once, so it is a method of Engine (engine.h) that bypasses the queue. With
// engine.h and telemetry/events.h this is the vocabulary a front end (ui/) uses: it re-exports the
// setting types the commands carry (settings/settings.h: the lists a user chooses from and their
// traits; KvPolicyConfig, SamplingParams, SpeculativeSettings).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "chat/chat_format.h"
#include "chat/chat_render.h"
#include "kv/kv_policy.h"
#include "sampling/sampling_params.h"
#include "settings/settings.h"
#include "speculative/spec_settings.h"

namespace fluoro {

struct ModelSettings {
    BackendKind backend = BackendKind::Cpu;
    int threads = 0;      // 0 = physical cores
    int64_t ctx = 4096;   // tokens of context (clamped to the model's trained context)
    int64_t batch = 512;  // tokens per prefill step
    KvTypes kv_type;      // keys' and values' types (f16 both by default)
    AttentionImpl attention = kDefaultAttentionImpl;
    MlaPath mla = MlaPath::Absorbed;  // latent-attention models (deepseek2) only
    // Prompt prefixes kept across conversations (kv/prefix_cache.h): that many extra KV
    // sequences, the pool sized for twice the context. 0: only the live conversation's prefix.
    int64_t prefix_cache_slots = 0;
    // Where the prefix cache persists across restarts (runtime/prefix_cache_persistence.h);
    // empty: it does not. Needs prefix_cache_slots > 0. Restored after the load when the file's
    // key matches; saved after a run that changed the cache, at most every
    // prefix_cache_save_interval_ms, and when the model unloads.
    std::filesystem::path prefix_cache_file;
    int64_t prefix_cache_save_interval_ms = 30000;
    // Sliding-window layers store every token (as llama.cpp's --swa-full) instead of only their
    // window. They do anyway where something needs the old rows: a prefix cache file, an
    // evicting KV policy, the CUDA backend.
    bool swa_full = false;
};

// Replaces the loaded model (if any); the conversation starts afresh.
struct LoadModel {
    std::filesystem::path path;
    ModelSettings settings;
};
struct UnloadModel {};
// Forgets the current conversation and starts a new one: empty, or holding `messages` (user and
// assistant turns, ending with an assistant one) to continue a conversation kept elsewhere (a
// stored one); the next SendMessage adds to them. Their KV is computed by the next run (or reused
// from the prefix cache).
struct NewConversation {
    std::string system_prompt;
    std::vector<ChatMessage> messages = {};
    // An earlier conversation of this engine (ConversationStarted::conversation) to take up again
    // with `messages`, under its id, instead of a new one (0): a caller sharing the engine gets its
    // chat back after a Complete, and the recorder goes on storing it where it was.
    uint64_t resume = 0;
    // What whoever stores the conversation should call it; empty: its first user message.
    std::string title = {};
};
// Adds a user message to the conversation (a new one when none) and generates the reply.
struct SendMessage {
    std::string text;
    // The conversation the message is meant for (ConversationStarted::conversation); 0: whichever
    // is live. When another one is live by the time the command runs (a Complete queued before it
    // took the engine's place), the message is refused, not added to the wrong conversation.
    uint64_t conversation = 0;
};
// Generates the last reply again (the conversation must end with an assistant message).
struct Regenerate {};
// A stateless request, as an OpenAI-style chat completion is: starts a new conversation holding
// `messages` (a leading "system" message is its system prompt; the rest are "user" and
// "assistant" turns ending with a "user" one) and generates the reply. sampling and max_tokens
// apply to this run only. Like any run, it reuses the KV of the longest prefix its prompt shares
// with the tokens already cached (a system prompt repeated by every request is computed once).
struct Complete {
    std::vector<ChatMessage> messages;
    std::optional<SamplingParams> sampling = std::nullopt;
    std::optional<int64_t> max_tokens = std::nullopt;
    // The reply ends before the first of these its text contains (stop "stop_string").
    std::vector<std::string> stop_strings = {};
    // Plain text completion (`fluoro run --raw`): `messages` is one user message whose text is the
    // whole prompt, tokenized as it is — no chat template, no system prompt, no special tokens
    // parsed. The engine's conversation is then that text and the continuation.
    bool raw = false;
    // Tool definitions and enable_thinking for the model's own template (chat_render.h). With
    // tools, the messages may also hold assistant turns with tool_calls and "tool" results, and
    // may end with tool results instead of a user message.
    ChatExtras extras = {};
    // The reply is one JSON object (decode/json_constraint.h: response_format json_object): the
    // run decodes without speculation, every step masked, and stops when the object closes.
    bool json_object = false;
};
// Throws Error saying what is wrong with a Complete's messages, max_tokens or sampling (the
// Engine and the BatchEngine take the same ones).
void check_complete(const Complete& c);
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
    std::optional<AttentionImpl> attention = std::nullopt;  // the loaded model switches at once
    // Speculative decoding from the next run (a draft model is loaded then, and its errors are
    // that run's).
    std::optional<SpeculativeSettings> speculative = std::nullopt;
    // The conversation's KV cache policy (kv/kv_policy.h), applied at once to the loaded model's
    // sequence and kept for later loads. Scoring policies turn the attention statistics on.
    std::optional<KvPolicyConfig> kv_policy = std::nullopt;
};

// One region of attention weights to capture from every step (AttentionSnapshot events). A step
// that is a prefill in several forward passes yields the rows of the last passes that hold its
// last `rows` tokens.
struct AttentionCaptureSpec {
    int32_t layer = 0;      // -1: every layer
    int32_t head = -1;      // query head; -1: every query head of the layer
    int64_t rows = 1;       // query rows per step: the step's last `rows` tokens; 0: all of them
    int64_t key_begin = 0;  // key positions [key_begin, key_end); key_end <= 0: up to the query
    int64_t key_end = 0;
};
// Replaces what attention is captured (empty specs: nothing) and whether the per-head sparsity
// readouts (AttentionStats events) are computed. Applies from the next step, also mid-run: a
// submitted one takes effect at the next step boundary of a running generation, before its turn
// in the queue. Works with or without a model loaded.
struct SetAttentionCapture {
    std::vector<AttentionCaptureSpec> specs;
    bool stats = false;
};

// The logit lens (decode/logit_lens.h) of generated token `token` of run `run`: the model's
// prediction of that token after each of its layers, at the position before it, computed from the
// live conversation's cache. The run must be the live conversation's latest, its tokens still
// cached (no KV policy eviction since) and the backend the CPU; answered by a LogitLensEvent whose
// error says why when it cannot be computed.
struct ComputeLogitLens {
    uint64_t run = 0;
    int64_t token = 0;
    int32_t top_k = 10;  // 1..100
};

// Every layer x head's attention of generated token `token` of run `run` (the token as the query:
// its own decode step), with each head's pattern; the same conditions as ComputeLogitLens, and
// the token must have been fed to the model (a run's last token is not). Answered by an
// AttentionOverview event, whose error says why when it cannot be computed.
struct ComputeAttentionOverview {
    uint64_t run = 0;
    int64_t token = 0;
};

using Command = std::variant<LoadModel, UnloadModel, NewConversation, SendMessage, Regenerate,
                             EditAndResend, ChangeSettings, SetAttentionCapture, Complete,
                             ComputeLogitLens, ComputeAttentionOverview>;

// "load_model", "unload_model", "new_conversation", "send", "regenerate", "edit", "settings",
// "attention_capture", "complete", "logit_lens", "attention_overview".
std::string_view command_name(const Command& c);

}  // namespace fluoro
