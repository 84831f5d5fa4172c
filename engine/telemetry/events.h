// The engine's telemetry events: plain values (no pointers into engine memory) that the engine
// thread emits and any consumer — the UI, the store writer, a replayed run — reads the same way.
// Times are nanoseconds of a monotonic clock (std::chrono::steady_clock) since the run started
// (RunStarted.t_ns == 0); events outside a run carry run == 0 and time since the engine started.
// Bulky snapshots travel as shared_ptr<const …> so fanning one out to several consumers copies
// nothing and nobody can change it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "chat/chat_render.h"
#include "chat/tool_calls.h"
#include "sampling/dist_top.h"
#include "sampling/sampler.h"
#include "sampling/sampling_params.h"
#include "settings/settings.h"  // TelemetryLevel
#include "telemetry/attention_patterns.h"
#include "telemetry/op_trace.h"
#include "telemetry/time_category.h"

namespace fluoro {

enum class RunKind { Send, Regenerate, Edit };
std::string_view run_kind_name(RunKind k);  // "send", "regenerate", "edit"

enum class StepPhase { Prefill, Decode, Draft, Verify };
std::string_view step_phase_name(StepPhase p);  // "prefill", "decode", "draft", "verify"

// A generation starts. The conversation's history is its first kept_messages messages, then
// user_text as a new user message unless the run is a Regenerate; the reply follows.
struct RunStarted {
    uint64_t run = 0;
    uint64_t conversation = 0;
    RunKind kind = RunKind::Send;
    int64_t kept_messages = 0;
    std::string user_text;
    std::string system_prompt;
    SamplingParams sampling;
    int64_t max_tokens = 0;
    std::string model_path, model_name, arch, backend, kv_type;
    int threads = 0;
    int64_t ctx = 0;
    int64_t prompt_tokens = 0;
    // The prompt as the model sees it (template markup included): token ids and each token's
    // text (special tokens rendered; a piece may be part of a UTF-8 sequence). Key labels for
    // attention views and the spans of prompt-cache views.
    std::vector<int32_t> prompt_ids;
    std::vector<std::string> prompt_pieces;
    // 1 where the prompt token is a special token of the vocabulary (control, user-defined or
    // unknown type: template markup such as <|im_start|>), for the prompt inspector. Live runs
    // only: empty for stored runs (the store does not keep it).
    std::vector<uint8_t> prompt_special;
    // What rendered the prompt (ModelLoaded's chat_template / chat_template_note); empty for a
    // raw prompt. Live runs only, like prompt_special.
    std::string chat_template, chat_template_note;
    // How that template teaches the model to call tools (chat/tool_calls.h): what a server
    // parses the reply with when it offered tools.
    ToolCallSyntax tool_call_syntax = ToolCallSyntax::None;
    int64_t wall_clock_ms = 0;  // system clock at the start, ms since the Unix epoch (display only)
    TelemetryLevel level = TelemetryLevel::Off;
    int64_t t_ns = 0;
    // The number Engine::submit returned for the command that started this run (0: unknown, as
    // for stored runs): how a caller sharing the engine finds its own run among the others.
    uint64_t submission = 0;
    // The prompt is user_text alone as plain text (Complete::raw): no template, no system prompt.
    bool raw = false;
};

// One generated token. id == -1: text flushed at the end of the run that no token released
// (an incomplete UTF-8 sequence), with no probabilities.
struct TokenEvent {
    uint64_t run = 0;
    int64_t index = 0;  // 0-based within the run
    int32_t id = -1;
    std::string piece;  // complete UTF-8 released by this token (may be empty)
    float logprob = 0;
    std::vector<TokenProb> top;  // most likely first; empty at telemetry level Off
    int64_t t_ns = 0;
    // The reasoning split (chat/reasoning_split.h) of live runs; split == false where it is not
    // known (stored runs keep the piece alone). reasoning: the token belongs to the model's
    // reasoning (the markers that open and close it included). reasoning_text / answer_text:
    // what this token adds to the reasoning block and to the answer, markers removed; a marker
    // cut across tokens is held back, so its text may come with a later token (or with an
    // id == -1 event at the end of the run).
    bool split = false;
    bool reasoning = false;
    std::string reasoning_text = {}, answer_text = {};
    // The vocabulary's text of this token and of each `top` entry (token_text: at every level;
    // top_text: with top): raw bytes, so a token holding part of a UTF-8 character holds that
    // part (piece above is the complete UTF-8 the token releases), special tokens by name.
    // What an API's logprobs report as "token" and "bytes".
    std::string token_text = {};
    std::vector<std::string> top_text = {};
};

// A mixture-of-experts model's routing in one step: for each layer, each token the step's
// forward passes ran (in order: a prefill's prompt tokens, a decode step's one token, a
// speculative step's drafts on the model itself and then the verified tokens) and each of the
// n_used experts it went to, the expert (most probable first; -1 where a pass ran fewer layers)
// and the router's weight for it.
struct ExpertRouting {
    int32_t n_layer = 0, n_expert = 0, n_used = 0;
    int64_t n_tokens = 0;
    std::vector<int32_t> experts;  // (n_layer, n_tokens, n_used) row-major
    std::vector<float> weights;    // the same shape
    int32_t expert(int32_t layer, int64_t token, int32_t j) const {
        return experts[size_t((int64_t(layer) * n_tokens + token) * n_used + j)];
    }
};
// "" when r is well formed: positive sizes, n_used <= n_expert, arrays of n_layer x n_tokens x
// n_used, every expert -1 (a layer a pass skipped) or below n_expert; otherwise what is wrong.
// What every reader of stored, imported or displayed routing checks before trusting it.
std::string expert_routing_error(const ExpertRouting& r);

// One step: a forward pass over `tokens` tokens (a whole prefill counts as one step) and the
// sampling after it. op_ns splits the wall time by category at level Full (zeros otherwise);
// the categories never sum to more than end_ns - start_ns.
struct StepEvent {
    uint64_t run = 0;
    int64_t index = 0;
    StepPhase phase = StepPhase::Decode;
    int64_t tokens = 0;
    int64_t start_ns = 0, end_ns = 0;
    CategoryTimes op_ns{};
    // The step's expert routing (a mixture-of-experts model, telemetry not Off); null otherwise.
    std::shared_ptr<const ExpertRouting> experts = nullptr;
    // Level Trace: every backend call of the step with its layer, bytes and FLOPs, and the host
    // pool's worker spans (telemetry/op_trace.h); null at the other levels.
    std::shared_ptr<const StepTrace> trace = nullptr;
};

// Attention weights of one head of one layer: rows are query positions first_row.., columns
// key positions key_begin..key_begin + n_cols - 1. Produced on request (SetAttentionCapture);
// keys a row does not attend to (its future, outside a sliding window) hold 0.
struct AttentionSnapshot {
    uint64_t run = 0;
    int64_t step = 0;
    int32_t layer = 0, head = 0;
    int64_t first_row = 0, n_rows = 0, n_cols = 0;
    std::vector<float> weights;  // (n_rows, n_cols) row-major
    int64_t t_ns = 0;
    int64_t key_begin = 0;  // key position of column 0

    // Whether `weights` holds exactly n_rows x n_cols values. A stored or imported snapshot is
    // not trusted: 2^32 x 2^32 multiplied in 64 bits is 0, and a shape of 2^32 rows by 0 columns
    // matches no weights while asking a reader to loop over every row; this holds both out.
    bool shape_ok() const {
        if (n_rows < 0 || n_cols < 0) return false;
        if (n_cols == 0) return n_rows == 0 && weights.empty();
        return weights.size() % uint64_t(n_cols) == 0 &&
               uint64_t(n_rows) == weights.size() / uint64_t(n_cols);
    }
};

// Sparsity readouts of one head over the attention of its query row(s) in one step.
struct AttentionHeadStats {
    float entropy = 0;          // nats
    float top_k_mass = 0;       // mass on the top_k keys with the most weight
    float below_threshold = 0;  // fraction of keys whose weight is below `threshold`
    float sink_mass = 0;        // mass on the first 4 keys (attention sinks)
};

// Per layer and query head, the sparsity of one step's attention (the step's last query row).
struct AttentionStats {
    uint64_t run = 0;
    int64_t step = 0;
    int32_t n_layer = 0, n_head = 0;
    int32_t top_k = 8;
    float threshold = 1e-3f;
    int64_t n_keys = 0;  // keys the last row attended to (in the layers that see the most keys)
    std::vector<AttentionHeadStats> heads;  // (n_layer, n_head) row-major
    int64_t t_ns = 0;
};

enum class KvBlockState : uint8_t { Free, Used, Shared, Sink, Heavy, Evicted };
std::string_view kv_block_state_name(KvBlockState s);

struct KvBlock {
    int32_t owner = -1;  // sequence (conversation slot) holding it; -1 when free
    KvBlockState state = KvBlockState::Free;
    int32_t tokens = 0;  // tokens stored in the block
};

// KV cache occupancy in blocks of block_tokens tokens.
struct KvSnapshot {
    uint64_t run = 0;
    int64_t step = 0;
    int32_t block_tokens = 0;
    int64_t bytes_per_token = 0;
    std::vector<KvBlock> blocks;
    int64_t t_ns = 0;
};

// One eviction by the KV policy (kv/kv_policy.h) of the conversation's sequence: which tokens left
// the cache and which stayed (conversation positions, ascending) and why each stayed.
struct KvEviction {
    uint64_t run = 0;
    int64_t step = 0;              // the step it made room for
    std::string policy;            // "window", "streaming", "h2o", ...
    int64_t budget = 0;            // tokens the policy may keep
    int64_t length_before = 0;     // tokens cached before
    std::vector<int64_t> evicted;  // conversation positions dropped
    std::vector<int64_t> kept;     // conversation positions kept
    std::vector<uint8_t> reasons;  // per kept position: KvKeepReason (0 sink, 1 recent, 2 heavy)
    double ms = 0;                 // decision + compaction + key re-rotation
    int64_t t_ns = 0;
};

struct DraftToken {
    int32_t id = -1;
    float q = 0;  // drafter probability
    float p = 0;  // target probability
    bool accepted = false;
};

// One speculative step: drafted tokens checked by the target model (producer: speculative work).
struct SpecStep {
    uint64_t run = 0;
    int64_t step = 0;
    std::string drafter;
    std::vector<DraftToken> drafted;
    int32_t accepted = 0;
    int32_t resampled = -1;  // token drawn from the corrected distribution, -1 when none
    int32_t bonus = -1;      // the target's token after a fully accepted draft, -1 when none
    int64_t draft_ns = 0, verify_ns = 0;  // time drafting, time in the target's forward + check
    int64_t t_ns = 0;
};

// What a prefill found already cached: the prompt's first cached_tokens tokens (the matched span
// [0, cached_tokens)) were reused, computed_tokens ran through the model.
// One node of the prefix cache's radix tree (PrefixCacheEvent::tree; kv/prefix_cache.h).
struct PrefixTreeNode {
    int32_t parent = -1;      // index into the tree; -1: the root
    int64_t depth = 0;        // tokens from the root to this node's end
    int64_t edge_tokens = 0;  // tokens on the edge into it
    // Their text: all of it up to 24 tokens, else the first 16, " … " and the last 8.
    std::string text;
    int64_t slot = -1;     // the entry ending here (-1: none)
    int64_t recency = -1;  // that entry's rank by last use (0: the most recent)
    int64_t entries = 0;   // entries in its subtree: how many cached prefixes share this edge
    int64_t matched = 0;   // tokens of its edge the request's prompt follows from the root
    int64_t bytes = 0;     // KV bytes of its edge's tokens, held once for the entries under it
};

struct PrefixCacheEvent {
    uint64_t run = 0;
    int64_t prompt_tokens = 0, cached_tokens = 0, computed_tokens = 0;
    int64_t evicted_tokens = 0;  // tokens of prefix-cache entries evicted for this prompt
    int64_t t_ns = 0;
    // Where the matched span came from: "none" (nothing reused), "conversation" (the sequence's
    // own previous turn) or "prefix_cache" (an entry kept from another conversation).
    std::string source = "none";
    // Why the match ended: at prompt position diverge_at the cache held diverge_cached_token
    // where the prompt has diverge_prompt_token; -1 when nothing cached continued (a miss on
    // new content, not a divergence).
    int64_t diverge_at = -1;
    int32_t diverge_prompt_token = -1, diverge_cached_token = -1;
    std::string
        diverge_cached_piece;  // diverge_cached_token's text (the prompt's is in RunStarted)
    int64_t evicted_entries = 0;
    // The prefix cache after this prompt: entries and the tokens they hold (0 when off).
    int64_t cache_entries = 0, cache_tokens = 0;
    // Its radix tree, pre-order from the root, with the prompt's path marked (empty when the
    // cache is off). Live only: not stored with the run.
    std::vector<PrefixTreeNode> tree = {};
};

struct MemoryCounters {
    uint64_t run = 0;
    int64_t weights_bytes = 0, kv_bytes = 0, kv_used_bytes = 0, scratch_bytes = 0;
    int64_t t_ns = 0;
    // The cache's sliding-window layers keeping only their last kv_window keys (0: they store
    // every token, or there are none), and what storing every token would allocate. Live only:
    // not stored with the run.
    int64_t kv_window = 0, kv_bytes_if_full = 0;
};

// The end of a run. stop: "eog", "max_tokens", "context_full", "cancelled" or "error" (then
// error says why and the reply is discarded from the conversation).
struct RunFinished {
    uint64_t run = 0;
    std::string stop;
    std::string error;
    // stop "error" because the prompt does not fit the context: its tokens and the context's
    // (0 for any other error).
    int64_t overflow_prompt_tokens = 0, overflow_context_tokens = 0;
    std::string text;  // the whole reply
    int64_t n_tokens = 0;
    int64_t prompt_tokens = 0, cached_tokens = 0, computed_tokens = 0;
    double prefill_ms = 0, ttft_ms = 0, decode_ms = 0;
    int64_t decode_steps = 0;
    // Speculative decoding (0 when off): tokens drafted, how many the target accepted.
    int64_t drafted_tokens = 0, accepted_tokens = 0;
    int64_t t_ns = 0;
    // The reasoning (TokenEvent::reasoning): its tokens (counted in n_tokens too), the time from
    // the run's start to its last token (the one that closed the block; 0 when none), and the
    // reply split into reasoning and answer, markers removed (text keeps the reply as generated).
    int64_t reasoning_tokens = 0;
    int64_t reasoning_ns = 0;
    std::string reasoning_text = {}, answer_text = {};
};

// A command failed; the engine goes on with the next one.
struct ErrorEvent {
    uint64_t run = 0;     // the run it broke, 0 when none
    std::string command;  // "load_model", "send", ...
    std::string message;
    int64_t t_ns = 0;
    uint64_t submission = 0;  // Engine::submit's number for the failed command; 0 when none
};

struct ModelLoaded {
    std::string path, name, arch, backend, kv_type;
    int threads = 0;
    int64_t ctx = 0;
    int64_t weights_bytes = 0;
    // The persisted prefix cache (ModelSettings::prefix_cache_file): what was restored, or why
    // the file was ignored; empty when none is configured or no file exists yet.
    std::string prefix_cache_note;
    int64_t prefix_cache_restored_entries = 0, prefix_cache_restored_tokens = 0;
    // How chats are rendered (ChatFormat::name(): "jinja" for the file's own template, else the
    // family: "chatml", "llama3", "gemma"); fallback: the file's template is not used, and
    // chat_template_note says what is used instead and why — worth a warning to the user.
    std::string chat_template;
    bool chat_template_fallback = false;
    std::string chat_template_note;
    // The KV cache: bytes allocated, and what storing every token of every layer would take
    // (more when the sliding-window layers keep only their window: kv_window > 0 keys, then
    // kv_window_note says why not when they could but do not).
    int64_t kv_bytes = 0, kv_bytes_if_full = 0;
    int64_t kv_window = 0;
    std::string kv_window_note;
};
struct ModelUnloaded {};
struct ConversationStarted {
    uint64_t conversation = 0;
    std::string system_prompt;
    // The turns it starts with (NewConversation::messages; a Complete's messages before its last
    // user message): the history its first run's kept_messages counts.
    std::vector<ChatMessage> messages;
    // The number Engine::submit returned for the command that started it (0: unknown): whose
    // conversation the engine's live one is now, for callers sharing the engine.
    uint64_t submission = 0;
    std::string title = {};  // NewConversation::title: what to store it as (empty: not named)
};

// Snapshots the stream dropped because its consumer fell behind, since the previous report.
struct DropReport {
    int64_t attention = 0, kv = 0;
    int64_t total_attention = 0, total_kv = 0;  // since the stream was created
};

// The logit lens of one generated token, on request (ComputeLogitLens; decode/logit_lens.h):
// the model's prediction of it after each layer, at the position before it. Not stored with the
// run: it is computed from the live conversation's cache. error non-empty: why it could not be.
struct LogitLensEvent {
    uint64_t run = 0;
    int64_t token = 0;     // the generated token's index in the run
    int64_t position = 0;  // the conversation position whose prediction this is
    int32_t input = -1;    // the token at that position
    int32_t target = -1;   // the token that followed it: the generated token looked at
    std::string input_piece, target_piece;
    std::vector<DistTop> layers;  // [L - 1]: after L layers; back(): the model's output
    std::vector<std::vector<std::string>> pieces;  // the texts of each layer's top tokens
    double ms = 0;                                 // the lens' compute time
    std::string error;
    int64_t t_ns = 0;
};

// Every layer x head's attention of one generated token at once, on request
// (ComputeAttentionOverview): the token's position run again through the model with its attention
// read out (decode/position_rerun.h), each head's pattern (telemetry/attention_patterns.h) and its
// probabilities over the keys 0..position. Not stored with the run (computed from the live
// conversation's cache). error non-empty: why it could not be.
struct AttentionOverview {
    uint64_t run = 0;
    int64_t token = 0;     // the generated token's index in the run
    int64_t position = 0;  // its conversation position: the query
    int32_t n_layer = 0, n_head = 0;
    std::vector<HeadPattern> heads;       // (n_layer, n_head) row-major
    std::vector<float> weights;           // (n_layer, n_head, position + 1) row-major
    std::vector<std::string> key_pieces;  // the token at each key position 0..position
    double ms = 0;
    std::string error;
    const HeadPattern& head(int32_t layer, int32_t h) const {
        return heads[size_t(layer) * size_t(n_head) + size_t(h)];
    }
    std::span<const float> row(int32_t layer, int32_t h) const {
        const size_t n = size_t(position + 1);
        return {weights.data() + (size_t(layer) * size_t(n_head) + size_t(h)) * n, n};
    }
};

// A remote server's load as its GET /metrics reported it, for a window attached to an
// OpenAI-compatible server (vLLM, SGLang, llama-server, fluoro serve: app/remote/remote_engine.h):
// read before and after each run. Server-wide figures, not this run's internals: counters are the
// server's totals since it started. -1 where the server exposes no such metric.
struct ServerLoadEvent {
    uint64_t run = 0;
    std::string names;  // whose metric names were read: "vllm", "sglang", "llamacpp"; "" none
    double running = -1, waiting = -1;             // requests
    double kv_usage = -1;                          // the KV cache's used fraction, 0..1
    double prefix_queries = -1, prefix_hits = -1;  // prompt tokens looked up / found cached
    double prompt_tokens = -1, generation_tokens = -1;
    double spec_draft_tokens = -1, spec_accepted_tokens = -1;  // speculative decoding
    int64_t t_ns = 0;
};

using Event =
    std::variant<RunStarted, TokenEvent, StepEvent, std::shared_ptr<const AttentionSnapshot>,
                 std::shared_ptr<const KvSnapshot>, SpecStep, PrefixCacheEvent, MemoryCounters,
                 RunFinished, ErrorEvent, ModelLoaded, ModelUnloaded, ConversationStarted,
                 DropReport, AttentionStats, KvEviction, std::shared_ptr<const LogitLensEvent>,
                 std::shared_ptr<const AttentionOverview>, ServerLoadEvent>;

// The run an event belongs to (0 for engine-level events).
uint64_t event_run(const Event& e);

// The end of a request that never became a run (refused before it began, cancelled while it
// waited): run 0, `stop` ("error", "cancelled") and why.
RunFinished finished_without_run(std::string stop, std::string error = {});

}  // namespace fluoro
