// What a KV cache policy (kv/kv_policy.h) and KV storage type cost in quality and buy in speed:
// the measurement loops behind `fluoro eval kv`.
//
//   perplexity  token-by-token decoding of a long text through a Sequence under the policy, so
//               eviction really happens as it would in a chat (not llama.cpp's chunked method):
//               NLL of every token given everything before it that the policy kept, and its
//               average over position buckets (the "NLL over position" curve of StreamingLLM).
//   passkey     a 5-digit key hidden at a depth of 0..100% in filler text (Mohtashami & Jaggi
//               2023); the prompt is prefilled under the policy (evicting in chunks when it is
//               longer than the budget), then up to 8 tokens are decoded greedily; exact match.
//   speed       decode tok/s after a prompt of `context` tokens has been prefilled under the
//               policy: what a smaller (evicted or quantized) cache buys at long context.
//
// Budgets are given as a fraction of the evaluated length (the text for perplexity, the prompt
// for passkey, the context for speed) or as a fixed number of tokens (KvBudget).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kv/kv_cache.h"
#include "kv/kv_policy.h"

namespace fluoro {

class Model;

// A KV budget: `percent` of the evaluated length, or a fixed number of tokens.
struct KvBudget {
    double percent = 100;  // used when tokens == 0
    int64_t tokens = 0;

    // Tokens kept for a sequence of `length` tokens: at least 1, at most length.
    int64_t resolve(int64_t length) const;
    bool is_full() const { return tokens == 0 && percent >= 100; }
    std::string label() const;  // "50%", "256"
};
// "50%", "12.5%", "256". nullopt for anything else (0%, negative, > 100%, junk).
std::optional<KvBudget> parse_kv_budget(std::string_view text);

// The policy and cache a measurement runs under. policy.budget is ignored: it is resolved from
// `budget` against each measurement's length (0 for the full policy: the whole context).
struct KvEvalSetup {
    KvPolicyConfig policy;
    KvBudget budget;
    KvTypes kv_type;

    // policy with its budget resolved for a sequence of `length` tokens.
    KvPolicyConfig resolved(int64_t length) const;
};

// What the policy did over one measurement.
struct KvEvictionTally {
    int64_t events = 0;          // evictions
    int64_t evicted_tokens = 0;  // tokens dropped over all of them
    int64_t max_cached = 0;      // most slots cached at once
    double ms = 0;               // decision + compaction + key re-rotation
};

// --- perplexity ---

struct KvPplResult {
    int64_t budget_tokens = 0;  // resolved budget (the text's length under full)
    double ppl = 0;             // exp(mean NLL) over every scored token
    double mean_nll = 0;
    int64_t scored_tokens = 0;  // tokens.size() - 1: every token but the first is predicted
    std::vector<float> nll;     // per scored token: nll[i] is -log p(tokens[i + 1] | kept prefix)
    int64_t bucket = 0;         // positions per bucket
    std::vector<double> bucket_nll;  // mean NLL of the predictions of tokens in each bucket
    KvEvictionTally evictions;
    double seconds = 0;
    double tokens_per_s = 0;
};

// Decodes tokens one at a time under `setup` (tokens[0] is prefilled alone; put BOS there when
// the model wants one) and scores every next token. bucket: positions per NLL bucket (the
// prediction of tokens[i] lands in bucket i / bucket). progress(done, total) now and then.
// Throws Error for fewer than 2 tokens, a budget the model's context cannot hold, and whatever
// the policy throws (the full policy past the model's context).
KvPplResult kv_eval_perplexity(Model& model, std::span<const int32_t> tokens,
                               const KvEvalSetup& setup, int64_t bucket = 1024,
                               const std::function<void(int64_t, int64_t)>& progress = {});

// --- passkey retrieval ---

enum class PasskeyFormat { Plain, Chat };
std::string_view passkey_format_name(PasskeyFormat f);  // "plain", "chat"

struct PasskeyPrompt {
    std::vector<int32_t> tokens;
    std::string key;            // 5 digits
    int64_t needle_begin = -1;  // token positions of the needle sentence [begin, end), -1: not
    int64_t needle_end = -1;    // found as a token run (should not happen)
    int64_t filler_before = 0;  // filler repetitions before and after the needle
    int64_t filler_after = 0;
};

// About `length` tokens: an instruction, filler ("The grass is green. The sky is blue. ..."), the
// needle "The pass key is KEY. Remember it. KEY is the pass key." after `depth` (0..1) of the
// filler, more filler, then "What is the pass key? The pass key is". Chat: the instruction,
// haystack and question are the user turn of the model's chat template and the assistant turn
// opens with "The pass key is". Throws Error when length is too small to hold the frame.
PasskeyPrompt make_passkey_prompt(const Model& model, int64_t length, double depth, int key,
                                  PasskeyFormat format);

struct PasskeyTrial {
    int64_t length = 0;  // asked
    int64_t prompt_tokens = 0;
    double depth = 0;  // 0..1
    int64_t budget_tokens = 0;
    std::string key, answer;  // answer: the decoded continuation
    bool correct = false;     // the first run of digits in the answer is the key
    // Needle tokens still cached when the prompt was prefilled (of needle_end - needle_begin).
    int64_t needle_tokens = 0, needle_kept = 0;
    KvEvictionTally evictions;
    double seconds = 0;
};

// Prefills the prompt under `setup` (its budget a share of the prompt), decodes up to max_new
// tokens greedily (stops at end of generation or when the key's digits are complete).
PasskeyTrial kv_eval_passkey(Model& model, const PasskeyPrompt& prompt, const KvEvalSetup& setup,
                             int64_t max_new = 8);

// --- decode speed ---

struct KvSpeedResult {
    int64_t context = 0;  // conversation length after the timed steps
    int64_t n_gen = 0;
    int64_t budget_tokens = 0;
    int64_t cached_tokens = 0;  // slots cached at the end
    size_t kv_bytes = 0;        // cache bytes those slots take (shape bytes per token × slots)
    double prefill_seconds = 0;
    double tokens_per_s = 0;  // decode steps only, eviction included
    KvEvictionTally evictions;
};

// Prefills the first context - n_gen - 4 tokens of text under `setup` (budget a share of
// context), decodes 4 untimed warm-up steps, then times n_gen decode steps feeding the text's
// next tokens, so the timed steps run at a conversation length just under `context`. Eviction
// and (for scoring policies) the attention statistics are part of the timed cost.
KvSpeedResult kv_eval_speed(Model& model, std::span<const int32_t> text, int64_t context,
                            const KvEvalSetup& setup, int64_t n_gen = 64);

// --- the grid ---

enum class KvEvalTask { Ppl, Passkey, Speed };
std::string_view kv_eval_task_name(KvEvalTask t);  // "ppl", "passkey", "speed"
std::optional<KvEvalTask> parse_kv_eval_task(std::string_view name);

struct KvEvalPlan {
    std::vector<KvPolicyKind> policies;
    std::vector<KvBudget> budgets;  // the full policy runs once per type, at 100%
    std::vector<KvTypes> kv_types;  // keys' and values' types of each cell
    std::vector<KvEvalTask> tasks;
    KvPolicyConfig base;  // sinks, recent, ... shared by every policy (kind and budget set here)
    // ppl: the first ppl_tokens of the text (0: all of it), bucketed.
    int64_t ppl_tokens = 4096;
    int64_t ppl_bucket = 1024;
    // passkey: every length × depth, keys drawn from `seed`.
    std::vector<int64_t> passkey_lengths{1024, 2048, 4096};
    std::vector<double> passkey_depths{0, 0.25, 0.5, 0.75, 1.0};
    PasskeyFormat passkey_format = PasskeyFormat::Chat;
    uint64_t seed = 1234;
    // speed: conversation lengths (the full policy fails past the model's context).
    std::vector<int64_t> speed_contexts{4096, 8192};
    int64_t speed_gen = 64;
};

// One cell of the grid.
struct KvEvalCell {
    KvPolicyKind policy = KvPolicyKind::Full;
    KvBudget budget;
    KvTypes kv_type;
    std::optional<KvPplResult> ppl;
    std::vector<PasskeyTrial> passkey;
    std::vector<KvSpeedResult> speed;
    std::vector<std::string> errors;  // "task: message" for each measurement that failed
};

// The cells in the order they are run: for each KV type, full at 100% first, then every other
// policy at every budget (a 100% budget of an evicting policy is kept: it must equal full).
std::vector<KvEvalCell> kv_eval_cells(const KvEvalPlan& plan);

// Runs every cell's tasks over `text` (token ids of the long text, BOS first when the model wants
// one). A measurement that throws Error is recorded in its cell's errors and the run goes on.
// progress(message) before each measurement.
std::vector<KvEvalCell> run_kv_eval(Model& model, std::span<const int32_t> text,
                                    const KvEvalPlan& plan,
                                    const std::function<void(const std::string&)>& progress = {});

}  // namespace fluoro
