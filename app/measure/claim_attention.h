// The textbook's claims about where attention goes (docs/CLAIMS.md 4–6), measured from the
// attention rows of sampled query positions of a long text: every layer × head's weights over
// all earlier keys, read out by re-running each position (runtime/attention_overview.h).
//   sinks          the first tokens draw a large share of attention in most layers (StreamingLLM),
//                  so keeping them with a recent window keeps perplexity where a window alone
//                  loses it, at a fraction of re-computing the window per token
//   heavy_hitters  a small set of tokens gathers most of the accumulated attention (H2O)
//   sliding_window stacked windowed layers widen the receptive field by a window per layer; a
//                  global layer reaches everything (Gemma 3's 5 local : 1 global)
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

namespace fluoro {
class Model;
}

namespace fluoro::app {

// Per layer, from the sampled rows: means over heads and queries.
struct AttentionSample {
    int32_t n_layer = 0, n_head = 0;
    std::vector<int64_t> queries;
    int64_t sink_keys = 4;
    std::vector<double> sink_mass;                 // mass on keys [0, sink_keys)
    std::vector<double> beyond_window;             // mass on keys older than the layer's window
    int64_t shared_keys = 0;                       // keys [0, shared_keys) every sampled query sees
    std::vector<std::vector<double>> accumulated;  // per layer, per shared key: summed weight
};

// Prefills `text` into a cache of its own and reads the rows of `queries` (each < text.size()).
AttentionSample sample_attention(Model& model, std::span<const int32_t> text,
                                 std::span<const int64_t> queries);

// The claims' JSON {"claim", "verdict", "why", "data"}. sinks also runs three token-by-token
// perplexities of `text` (full cache, window, StreamingLLM at `budget` tokens) and times the
// recompute-the-window baseline.
nlohmann::json claim_sinks(Model& model, const AttentionSample& s, std::span<const int32_t> text,
                           int64_t ppl_tokens, int64_t budget);
nlohmann::json claim_heavy_hitters(const AttentionSample& s);
nlohmann::json claim_sliding_window(const Model& model, const AttentionSample& s,
                                    int64_t text_tokens);

// Of `scores`, the share of their sum held by the largest `fraction` of them (at least one).
double top_share(std::vector<double> scores, double fraction);

}  // namespace fluoro::app
