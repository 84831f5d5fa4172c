// Perplexity of a token stream, computed the way llama.cpp's `perplexity` tool does so the two
// figures are comparable: the text is cut into independent chunks of n_ctx tokens (the first
// replaced by BOS when the vocabulary adds one), and in each chunk only the second half of the
// positions is scored, so every scored token sees at least n_ctx/2 tokens of context.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace fluoro {

class Model;
class KvCache;

struct PerplexityOptions {
    int64_t n_ctx = 512;     // chunk length (the context each chunk is evaluated in)
    int64_t max_chunks = 0;  // 0 = as many whole chunks as the text holds
};

struct PerplexityResult {
    double ppl = 0;  // exp(mean NLL) over all scored tokens
    double mean_nll = 0;
    int64_t scored_tokens = 0;
    int64_t chunks = 0;
    std::vector<double> running_ppl;  // after each chunk (what llama.cpp prints as [1]x,[2]y,...)
    double ms = 0;
};

// kv must hold at least n_ctx tokens in sequence 0. progress(chunk, running_ppl) after each chunk.
PerplexityResult perplexity(Model& model, KvCache& kv, std::span<const int32_t> tokens,
                            const PerplexityOptions& opt,
                            const std::function<void(int64_t, double)>& progress = {});

}  // namespace fluoro
