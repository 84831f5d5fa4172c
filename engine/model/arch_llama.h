// The llama architecture (SmolLM2, Llama 2/3, TinyLlama, Mistral-style) — and, with QKV biases and
// NEOX RoPE, qwen2, which derives from it in arch_qwen2.cpp.
#pragma once

#include <vector>

#include "model/architecture.h"
#include "model/decoder_buffers.h"

namespace fluoro {

class LlamaArchitecture : public Architecture {
  public:
    explicit LlamaArchitecture(const Hparams& hp, RopeMode rope_mode = RopeMode::Norm,
                               bool qkv_bias = false);
    void bind(const WeightBinder& w) override;
    void reserve(Backend& backend, int64_t max_tokens, int64_t max_logit_rows) override;
    Act forward(Backend& backend, const Batch& batch, KvCache& kv) override;
    KvShape kv_shape() const override;
    RopeParams layer_rope(int64_t il) const override;

  private:
    struct Layer {
        Weight attn_norm, wq, wk, wv, wo, bq, bk, bv;  // wq: (n_embd -> n_head*hd)
        Weight ffn_norm, gate, up, down;               // gate/up: (n_embd -> n_ff)
    };

    Hparams hp_;
    RopeMode rope_mode_;
    bool qkv_bias_;
    Weight token_embd_, output_norm_, output_;  // output_ = token_embd_ when tied
    std::vector<Layer> layers_;
    DecoderBuffers buf_;
};

}  // namespace fluoro
