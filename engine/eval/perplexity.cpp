#include "eval/perplexity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "core/error.h"
#include "eval/window_logits.h"
#include "model/model.h"

namespace fluoro {
namespace {

// -log softmax(logits)[target], in double.
double nll(std::span<const float> logits, int32_t target) {
    const float max = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float l : logits) sum += std::exp(double(l) - double(max));
    return std::log(sum) + double(max) - double(logits[size_t(target)]);
}

}  // namespace

PerplexityResult perplexity(Model& model, KvCache& kv, std::span<const int32_t> tokens,
                            const PerplexityOptions& opt,
                            const std::function<void(int64_t, double)>& progress) {
    const int64_t n_ctx = opt.n_ctx;
    if (n_ctx < 4) throw Error("perplexity: the context must be at least 4 tokens");
    if (kv.capacity(0) < n_ctx)
        throw Error("perplexity: the KV cache holds " + std::to_string(kv.capacity(0)) +
                    " tokens, fewer than the context of " + std::to_string(n_ctx));
    const std::vector<std::vector<int32_t>> windows =
        text_windows(model, tokens, n_ctx, opt.max_chunks);
    if (windows.empty())
        throw Error("perplexity: the text has " + std::to_string(tokens.size()) +
                    " tokens, fewer than one chunk of " + std::to_string(n_ctx));
    const auto start = std::chrono::steady_clock::now();
    const int64_t first = n_ctx / 2;
    PerplexityResult r;
    double total = 0.0;
    for (size_t c = 0; c < windows.size(); ++c) {
        const std::vector<int32_t>& window = windows[c];
        window_logits(model, kv, window, first, [&](int64_t p, std::span<const float> logits) {
            total += nll(logits, window[size_t(p + 1)]);
            ++r.scored_tokens;
        });
        ++r.chunks;
        r.running_ppl.push_back(std::exp(total / double(r.scored_tokens)));
        if (progress) progress(int64_t(c), r.running_ppl.back());
    }
    r.mean_nll = total / double(r.scored_tokens);
    r.ppl = std::exp(r.mean_nll);
    r.ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return r;
}

}  // namespace fluoro
