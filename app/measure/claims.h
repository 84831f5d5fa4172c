// `fluoro eval claims` and Measure → Textbook claims: what the project's founding documents say
// about inference, measured on the loaded model, each with a verdict and the rule behind it
// (docs/CLAIMS.md), all eight:
//   kv_scaling      the KV cache turns quadratic work into linear (eval/kv_scaling.h)
//   kv_memory       KV bytes per token = 2 × layers × KV heads × head dim × element size
//                   (eval/kv_memory.h), and the documents' worked example from published shapes
//   flash_io        FlashAttention's IO argument on this CPU (claim_flash.h)
//   sliding_window  receptive field of stacked windowed layers (claim_attention.h)
//   sinks           attention sinks and StreamingLLM (claim_attention.h)
//   heavy_hitters   a few tokens gather most attention (claim_attention.h)
//   verify_cost     verifying k drafted tokens costs about one decode step (spec_bench.h
//                   measure_verify_cost)
//   prefix_cache    TTFT linear in the uncached part; one changed token (claim_prefix.h)
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fluoro {
class Model;
}

namespace fluoro::app {

inline constexpr const char* kClaimNames[] = {"kv_scaling",     "kv_memory",   "flash_io",
                                              "sliding_window", "sinks",       "heavy_hitters",
                                              "verify_cost",    "prefix_cache"};
// "kv_scaling, kv_memory, ..." for messages and help.
std::string claim_names();
// Throws Error naming the first name that is not a claim.
void check_claim_names(const std::vector<std::string>& names);

struct ClaimsOptions {
    std::vector<std::string> only;                                  // empty: every claim
    std::vector<int64_t> positions{64, 128, 256, 512, 1024, 2048};  // kv_scaling
    int reps = 3;                                                   // kv_scaling: timings per point
    int32_t max_draft = 8;                                          // verify_cost: k = 0..max_draft
    int64_t spec_n_gen = 48;  // verify_cost: tokens per prompt of its speculative run (0: none)
    // The text the attention, sink and prefix claims read (empty: the GPL-3 text Debian ships
    // in /usr/share/common-licenses, else a repeated filler sentence).
    std::string text;
    int64_t attention_tokens = 1024;  // sliding_window, sinks, heavy_hitters: the text's length
    int64_t sink_budget = 256;        // sinks: the window / StreamingLLM budget
    int64_t prefix_tokens = 512;      // prefix_cache: the prompt's length
    std::vector<int64_t> io_contexts{512, 1024, 2048, 4096};  // flash_io
};

// Throws Error for an unknown claim name. progress(claim name) before each.
nlohmann::json run_claims(Model& model, const ClaimsOptions& opt,
                          const std::function<void(const std::string&)>& progress = {});

// The verdict rules, public for their tests. Each returns {"verdict", "why"}.
nlohmann::json kv_scaling_verdict(double cached_slope, double recompute_slope,
                                  float max_logit_diff);
nlohmann::json verify_cost_verdict(const std::vector<double>& v);

}  // namespace fluoro::app
