#include "runtime/sequence.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "core/error.h"
#include "model/model.h"

namespace fluoro {

Sequence::Sequence(Model& model, KvCache& kv, int64_t seq_id)
    : model_(model), kv_(kv), seq_(seq_id) {
    if (seq_id < 0 || seq_id >= kv.shape().n_seq)
        throw Error("sequence " + std::to_string(seq_id) + " does not exist in the KV cache");
    tokens_.reserve(size_t(kv.capacity(seq_id)));
    positions_.reserve(size_t(model.max_batch()));
    seq_ids_.assign(size_t(model.max_batch()), int32_t(seq_id));
    kv_.set_length(seq_, 0);
}

int64_t Sequence::context_size() const {
    return kv_.capacity(seq_);
}

void Sequence::set_exit_layer(int64_t n) {
    if (n < 0) throw Error("exit layer " + std::to_string(n) + " must be >= 0 (0 = all layers)");
    exit_layer_ = n;
    reset();
}

void Sequence::reset() {
    truncate(0);
}

void Sequence::truncate(int64_t n) {
    n = std::clamp<int64_t>(n, 0, int64_t(tokens_.size()));
    tokens_.resize(size_t(n));
    kv_.set_length(seq_, n);
}

std::span<const float> Sequence::prefill(std::span<const int32_t> prompt, PrefillStats* stats,
                                         const std::atomic<bool>* cancel) {
    if (prompt.empty()) throw Error("the prompt is empty: nothing to compute");
    if (int64_t(prompt.size()) > context_size())
        throw Error("the prompt has " + std::to_string(prompt.size()) +
                    " tokens but the context holds " + std::to_string(context_size()) +
                    "; shorten it or raise the context size");
    model_.file().check_unchanged_on_disk();  // a file truncated under us would fault, not err
    const auto start = std::chrono::steady_clock::now();
    // Longest common prefix with what is cached, leaving at least the last token to compute.
    const size_t limit = std::min(tokens_.size(), prompt.size() - 1);
    size_t reuse = 0;
    while (reuse < limit && tokens_[reuse] == prompt[reuse]) ++reuse;
    truncate(int64_t(reuse));

    std::span<const float> logits;
    const int64_t max_batch = model_.max_batch();
    for (size_t begin = reuse; begin < prompt.size(); begin += size_t(max_batch)) {
        if (cancel && cancel->load()) throw Error("prefill cancelled");
        const size_t end = std::min(prompt.size(), begin + size_t(max_batch));
        positions_.clear();
        for (size_t i = begin; i < end; ++i) positions_.push_back(int32_t(i));
        const int32_t last_row = int32_t(end - begin - 1);
        const Batch batch{prompt.subspan(begin, end - begin), positions_,
                          std::span<const int32_t>(seq_ids_.data(), end - begin),
                          std::span<const int32_t>(&last_row, 1), exit_layer_};
        logits = model_.forward(batch, kv_);
        tokens_.insert(tokens_.end(), prompt.begin() + std::ptrdiff_t(begin),
                       prompt.begin() + std::ptrdiff_t(end));
        kv_.set_length(seq_, int64_t(tokens_.size()));
    }
    if (stats) {
        stats->prompt_tokens = int64_t(prompt.size());
        stats->reused_tokens = int64_t(reuse);
        stats->computed_tokens = int64_t(prompt.size() - reuse);
        stats->ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
    }
    return logits;
}

std::span<const float> Sequence::decode(int32_t token) {
    if (remaining() <= 0)
        throw Error("the context is full (" + std::to_string(context_size()) + " tokens)");
    const int32_t pos = int32_t(tokens_.size());
    const int32_t row = 0;
    const Batch batch{std::span<const int32_t>(&token, 1), std::span<const int32_t>(&pos, 1),
                      std::span<const int32_t>(seq_ids_.data(), 1),
                      std::span<const int32_t>(&row, 1), exit_layer_};
    auto logits = model_.forward(batch, kv_);
    tokens_.push_back(token);
    kv_.set_length(seq_, int64_t(tokens_.size()));
    return logits;
}

}  // namespace fluoro

namespace fluoro {

int64_t Sequence::max_extend() const {
    return std::min(model_.max_batch(), model_.max_logit_rows());
}

std::span<const float> Sequence::extend(std::span<const int32_t> tokens) {
    if (tokens.empty()) throw Error("extend: no tokens to append");
    if (int64_t(tokens.size()) > remaining())
        throw Error("the context is full: " + std::to_string(tokens.size()) +
                    " tokens do not fit in the " + std::to_string(remaining()) + " left of " +
                    std::to_string(context_size()));
    const int64_t limit = max_extend();
    if (int64_t(tokens.size()) > limit)
        throw Error("extend: " + std::to_string(tokens.size()) +
                    " tokens exceed one forward step (" + std::to_string(limit) + ")");
    positions_.clear();
    rows_.clear();
    for (size_t i = 0; i < tokens.size(); ++i) {
        positions_.push_back(int32_t(tokens_.size() + i));
        rows_.push_back(int32_t(i));
    }
    const Batch batch{tokens, positions_, std::span<const int32_t>(seq_ids_.data(), tokens.size()),
                      rows_, exit_layer_};
    auto logits = model_.forward(batch, kv_);
    tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
    kv_.set_length(seq_, int64_t(tokens_.size()));
    return logits;
}

}  // namespace fluoro
