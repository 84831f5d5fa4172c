// `fluoro bench spec`: what speculative decoding buys on this machine, per drafter and prompt
// category (spec_bench_prompts.h). Each prompt is generated greedily twice — plain, then
// speculative, alternating when repeated — and the report gives, with vLLM's and llama.cpp's
// names: acceptance rate (accepted / drafted), tau (mean tokens per target forward, the bonus
// token included), acceptance by draft position, decode tok/s of both and their ratio. Costs are
// measured too: c = drafting time per drafted token / target decode time per token, and
// v(k) = time of one target forward over k + 1 tokens / time of a one-token forward. The
// expected speedup from Leviathan et al.'s model with CPU verify cost, tau / (gamma * c +
// v(gamma)) at the mean draft length gamma, is printed beside the measured one.
//
// What a prompt set is called says what its text asks for, not what a small model does with it:
// SmolLM2-135M rewrites a function it was asked to copy. So every prompt's output is also
// measured for how much of it repeats its context (copied_fraction), and the report gives each
// prompt's row beside its category's: a speedup belongs with the copied fraction it came from.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "eval/spec_bench_prompts.h"
#include "speculative/drafter.h"
#include "speculative/spec_generate.h"

namespace fluoro {
class Model;
class KvCache;
}  // namespace fluoro

namespace fluoro::spec {

struct SpecBenchOptions {
    int64_t n_gen = 128;
    int32_t repetitions = 1;
    SpecOptions spec;
    std::vector<std::string> categories;  // empty: all
    std::vector<BenchPrompt> prompts;     // empty: the built-in sets (spec_bench_prompts())
    // Before each prompt × drafter pair: (pairs done, pairs in all). May throw to stop the bench.
    std::function<void(int64_t, int64_t)> progress;
};

inline constexpr int32_t kCopiedRun = 4;

// Of `output`'s tokens, the fraction that end a run of `n` tokens occurring earlier in
// prompt + output (so the token before it could have been drafted by copying): 0 for an empty
// output. Tokens before the n-th of the whole context count as not copied.
double copied_fraction(std::span<const int32_t> prompt, std::span<const int32_t> output,
                       int32_t n = kCopiedRun);

struct SpecBenchRow {
    std::string drafter, category;
    int64_t prompts = 0, tokens = 0;
    double copied = 0;  // copied_fraction over the category's plain outputs (token-weighted)
    int64_t drafted = 0, accepted = 0, target_steps = 0;
    double acceptance = 0;                   // accepted / drafted
    double tau = 0;                          // tokens / target forwards
    double mean_draft = 0;                   // drafted tokens per target forward (gamma)
    std::vector<double> accept_by_position;  // accepted / drafted at draft position i
    double plain_tps = 0, spec_tps = 0, speedup = 0;
    double draft_cost = 0;  // c
    double expected_speedup = 0;
};

// One prompt with one drafter, all repetitions together.
struct SpecBenchPromptRow {
    std::string drafter, category;
    int32_t prompt = 0;  // index in the prompt list (SpecBenchOptions::prompts or the built-in)
    int64_t tokens = 0;
    double copied = 0, acceptance = 0, tau = 0, speedup = 0;
    std::optional<double> reference_copied;  // copied_fraction of the prompt's correct answer
    int64_t drafted = 0, accepted = 0, target_steps = 0;  // all repetitions
    // The prompt as fed (chat template applied) and its greedy output (the same every
    // repetition, plain and speculative): with verify_cost, enough to replay a drafter offline
    // (scripts/spec/replay_lookup.py).
    std::vector<int32_t> prompt_tokens, output_tokens;
    std::optional<int32_t> end_token;  // the end-of-generation token that stopped it, if one did
};

struct SpecBenchResult {
    std::vector<double> verify_cost;  // v(k) for k = 0 .. max_draft drafted tokens
    double target_token_ms = 0;       // plain decode time per token, all prompts
    // v(k) as the decoding loop paid it: the mean time of a verification step that checked k
    // drafted tokens (its forward and its sampling) over target_token_ms (a plain step, forward
    // and sampling), all drafters; 0 where no step drafted k. On some hosts a forward inside the
    // loop costs more than the same forward timed back to back (docs/PERFORMANCE.md), which
    // verify_cost does not see.
    std::vector<double> verify_cost_in_loop;
    std::vector<int64_t> verify_steps_in_loop;  // steps behind each verify_cost_in_loop entry
    std::vector<SpecBenchRow> rows;
    std::vector<SpecBenchPromptRow> prompts;
};

// v(k) for k = 0..max_k: the time of one forward over k + 1 tokens after `prompt` (sequence 0,
// emptied first) over the time of a one-token forward, medians of 7 rounds after a warm-up round.
std::vector<double> measure_verify_cost(Model& model, KvCache& kv, std::span<const int32_t> prompt,
                                        int32_t max_k);

// Needs a KV cache of at least the longest prompt + n_gen + max_draft + 1 tokens (sequence 0).
SpecBenchResult run_spec_bench(Model& target, KvCache& kv, std::span<Drafter* const> drafters,
                               const SpecBenchOptions& opt);

}  // namespace fluoro::spec
