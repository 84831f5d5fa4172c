// One conversation's slot in the KV cache: the token ids whose K/V the cache holds for it, and the
// two ways to advance it — prefill (make the cache hold a prompt, reusing the longest prefix
// already cached, so a multi-turn chat never re-prefills its history) and decode (one token).
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "kv/kv_cache.h"

namespace fluoro {

class Model;

struct PrefillStats {
    int64_t prompt_tokens = 0;    // length of the prompt
    int64_t reused_tokens = 0;    // prefix already in the cache (not recomputed)
    int64_t computed_tokens = 0;  // tokens run through the model
    double ms = 0;                // wall time of the computation
};

class Sequence {
  public:
    Sequence(Model& model, KvCache& kv, int64_t seq_id);

    // Makes the cache hold exactly `prompt` and returns the logits of its last token (valid until
    // the next call). The last token is always computed (its logits are needed), so at most
    // prompt.size() - 1 tokens are reused. Errors: empty prompt, prompt longer than the context
    // (the message says both sizes), cancellation (the cache then holds a valid prefix).
    std::span<const float> prefill(std::span<const int32_t> prompt, PrefillStats* stats = nullptr,
                                   const std::atomic<bool>* cancel = nullptr);
    // Appends one token and returns its logits. Error when the context is full.
    std::span<const float> decode(int32_t token);
    // Appends up to max_batch tokens in one forward pass and returns the logits of every one of
    // them, (tokens.size(), n_vocab) row-major: speculative verification. Each row is computed
    // exactly as decode() would have computed it (batch-invariant kernels). Error when they do
    // not fit in the context or the batch.
    std::span<const float> extend(std::span<const int32_t> tokens);
    // Most tokens one extend() takes (the model's batch and logit-row limits).
    int64_t max_extend() const;

    const std::vector<int32_t>& tokens() const { return tokens_; }
    int64_t context_size() const;
    int64_t remaining() const { return context_size() - int64_t(tokens_.size()); }
    // Runs every later step through only the first n layers (0 = all): the self-speculative
    // draft. Forgets what is cached, which was computed with other layers.
    void set_exit_layer(int64_t n);
    int64_t exit_layer() const { return exit_layer_; }
    void reset();              // forget everything cached for this sequence
    void truncate(int64_t n);  // keep the first n tokens (rollback)

  private:
    Model& model_;
    KvCache& kv_;
    int64_t seq_;
    std::vector<int32_t> tokens_;
    int64_t exit_layer_ = 0;
    // Reused batch scratch (no allocation per step once grown to max_batch).
    std::vector<int32_t> positions_, seq_ids_, rows_;
};

}  // namespace fluoro
