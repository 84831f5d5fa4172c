// Gemma 3: scaled embeddings, per-head q/k RMSNorm, post-attention and post-FFN norms, GELU-tanh
// gated FFN, and sliding-window layers (local RoPE base 10000) interleaved with global ones every
// sixth layer; the LM head is tied to the embedding.
#pragma once

#include <vector>

#include "model/architecture.h"
#include "model/decoder_buffers.h"

namespace fluoro {

class Gemma3Architecture final : public Architecture {
  public:
    explicit Gemma3Architecture(const Hparams& hp) : hp_(hp) {}
    void bind(const WeightBinder& w) override;
    void reserve(Backend& backend, int64_t max_tokens, int64_t max_logit_rows) override;
    Act forward(Backend& backend, const Batch& batch, KvCache& kv) override;
    KvShape kv_shape() const override;
    RopeParams layer_rope(int64_t il) const override;

    // Layer il uses the sliding window unless it is one of every sixth (5, 11, 17, ...).
    static bool is_global_layer(int64_t il) { return il % 6 == 5; }
    static constexpr double kLocalRopeBase = 10000.0;

  private:
    struct Layer {
        Weight attn_norm, wq, wk, wv, wo, q_norm, k_norm, post_attn_norm;
        Weight ffn_norm, gate, up, down, post_ffn_norm;
    };

    Hparams hp_;
    Weight token_embd_, output_norm_, output_;
    std::vector<Layer> layers_;
    DecoderBuffers buf_;
};

}  // namespace fluoro
