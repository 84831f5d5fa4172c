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

    const std::vector<int32_t>& tokens() const { return tokens_; }
    int64_t context_size() const;
    int64_t remaining() const { return context_size() - int64_t(tokens_.size()); }
    void reset();              // forget everything cached for this sequence
    void truncate(int64_t n);  // keep the first n tokens (rollback)

  private:
    Model& model_;
    KvCache& kv_;
    int64_t seq_;
    std::vector<int32_t> tokens_;
    // Reused batch scratch (no allocation per step once grown to max_batch).
    std::vector<int32_t> positions_, seq_ids_;
};

}  // namespace fluoro
