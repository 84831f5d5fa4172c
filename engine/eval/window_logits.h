// One window of tokens evaluated from position 0, the logits of its scored positions handed out
// in order: the loop llama.cpp's perplexity and KL-divergence tools run per chunk, shared by
// perplexity() and fidelity().
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace fluoro {

class Model;
class KvCache;

// The text's first whole windows of n_ctx tokens (at most max_windows; 0 = all), each one's first
// token replaced by BOS when the vocabulary adds one — as llama.cpp's perplexity tool cuts them.
std::vector<std::vector<int32_t>> text_windows(const Model& model, std::span<const int32_t> tokens,
                                               int64_t n_ctx, int64_t max_windows);

// Clears sequence 0 of kv, evaluates `window` (kv must hold its length) in steps of the model's
// batch and logit-row limits, and calls row(p, logits) for p = first .. window.size()-2 in order
// (the logits at p predict window[p + 1]; the span is valid during the call).
void window_logits(Model& model, KvCache& kv, std::span<const int32_t> window, int64_t first,
                   const std::function<void(int64_t, std::span<const float>)>& row);

}  // namespace fluoro
