// `fluoro bench spec`: what speculative decoding buys on this machine, per drafter and prompt
// category (spec_bench_prompts.h). Each prompt is generated greedily twice — plain, then
// speculative, alternating when repeated — and the report gives, with vLLM's and llama.cpp's
// names: acceptance rate (accepted / drafted), tau (mean tokens per target forward, the bonus
// token included), acceptance by draft position, decode tok/s of both and their ratio. Costs are
// measured too: c = drafting time per drafted token / target decode time per token, and
// v(k) = time of one target forward over k + 1 tokens / time of a one-token forward. The
// expected speedup from Leviathan et al.'s model with CPU verify cost, tau / (gamma * c +
// v(gamma)) at the mean draft length gamma, is printed beside the measured one.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

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
};

struct SpecBenchRow {
    std::string drafter, category;
    int64_t prompts = 0, tokens = 0;
    int64_t drafted = 0, accepted = 0, target_steps = 0;
    double acceptance = 0;                   // accepted / drafted
    double tau = 0;                          // tokens / target forwards
    double mean_draft = 0;                   // drafted tokens per target forward (gamma)
    std::vector<double> accept_by_position;  // accepted / drafted at draft position i
    double plain_tps = 0, spec_tps = 0, speedup = 0;
    double draft_cost = 0;  // c
    double expected_speedup = 0;
};

struct SpecBenchResult {
    std::vector<double> verify_cost;  // v(k) for k = 0 .. max_draft drafted tokens
    double target_token_ms = 0;       // plain decode time per token, all prompts
    std::vector<SpecBenchRow> rows;
};

// Needs a KV cache of at least the longest prompt + n_gen + max_draft + 1 tokens (sequence 0).
SpecBenchResult run_spec_bench(Model& target, KvCache& kv, std::span<Drafter* const> drafters,
                               const SpecBenchOptions& opt);

}  // namespace fluoro::spec
