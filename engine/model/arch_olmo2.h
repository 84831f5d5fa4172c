// OLMo 2 (AI2): no norm before attention or the FFN; RMSNorm of their outputs instead
// (post-norms) before each residual add; RMSNorm of the whole Q and K projections (n_embd and
// n_head_kv * head_dim wide, not per head) before NEOX RoPE; SwiGLU FFN; untied LM head.
// OLMo 3's sliding-window layers (olmo2.attention.sliding_window) are refused at load.
#pragma once

#include <vector>

#include "model/architecture.h"
#include "model/decoder_buffers.h"

namespace fluoro {

class Olmo2Architecture final : public Architecture {
  public:
    explicit Olmo2Architecture(const Hparams& hp) : hp_(hp) {}
    void bind(const WeightBinder& w) override;
    void reserve(Backend& backend, int64_t max_tokens, int64_t max_logit_rows) override;
    Act forward(Backend& backend, const Batch& batch, KvCache& kv) override;
    KvShape kv_shape() const override;
    RopeParams layer_rope(int64_t il) const override;

  private:
    struct Layer {
        Weight wq, wk, wv, wo, q_norm, k_norm, post_attn_norm;  // q_norm: (n_head * hd)
        Weight gate, up, down, post_ffn_norm;
    };

    Hparams hp_;
    Weight token_embd_, output_norm_, output_;
    std::vector<Layer> layers_;
    DecoderBuffers buf_;
};

}  // namespace fluoro
