#include "eval/window_logits.h"

#include <algorithm>
#include <vector>

#include "model/model.h"

namespace fluoro {

std::vector<std::vector<int32_t>> text_windows(const Model& model, std::span<const int32_t> tokens,
                                               int64_t n_ctx, int64_t max_windows) {
    int64_t n = n_ctx > 0 ? int64_t(tokens.size()) / n_ctx : 0;
    if (max_windows > 0) n = std::min(n, max_windows);
    const auto& vocab = model.tokenizer().vocab();
    std::vector<std::vector<int32_t>> out;
    for (int64_t c = 0; c < n; ++c) {
        const auto* first = tokens.data() + c * n_ctx;
        std::vector<int32_t>& w = out.emplace_back(first, first + n_ctx);
        if (vocab.add_bos()) w[0] = vocab.bos();
    }
    return out;
}

void window_logits(Model& model, KvCache& kv, std::span<const int32_t> window, int64_t first,
                   const std::function<void(int64_t, std::span<const float>)>& row) {
    const int64_t n_ctx = int64_t(window.size()), n_vocab = model.n_vocab();
    const int64_t step = std::min(model.max_batch(), model.max_logit_rows());
    std::vector<int32_t> pos(static_cast<size_t>(step)), seq(static_cast<size_t>(step), 0), rows;
    kv.set_length(0, 0);
    for (int64_t b = 0; b < n_ctx; b += step) {
        const int64_t n = std::min(step, n_ctx - b);
        rows.clear();
        for (int64_t i = 0; i < n; ++i) {
            pos[size_t(i)] = int32_t(b + i);
            if (b + i >= first && b + i < n_ctx - 1) rows.push_back(int32_t(i));
        }
        const bool scored = !rows.empty();
        if (!scored) rows.push_back(int32_t(n - 1));  // logits unused; keeps the step valid
        const Batch batch{window.subspan(size_t(b), size_t(n)),
                          std::span<const int32_t>(pos.data(), size_t(n)),
                          std::span<const int32_t>(seq.data(), size_t(n)), rows};
        const std::span<const float> logits = model.forward(batch, kv);
        kv.set_length(0, b + n);
        if (!scored) continue;
        for (size_t k = 0; k < rows.size(); ++k)
            row(b + rows[k], logits.subspan(k * size_t(n_vocab), size_t(n_vocab)));
    }
}

}  // namespace fluoro
