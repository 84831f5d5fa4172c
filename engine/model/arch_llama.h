// The llama architecture (SmolLM2, Llama 2/3/3.1/3.2/3.3, TinyLlama, Mistral-style, and
// Mixtral-style files with experts) — and, with options, qwen2 (QKV biases, NEOX RoPE;
// arch_qwen2.cpp) and qwen3 (per-head Q/K RMSNorm, NEOX RoPE; arch_qwen3.cpp), qwen3moe and olmoe
// (a mixture-of-experts FFN, model/moe_ffn.h; arch_moe.cpp), granite (its four multipliers;
// arch_granite.cpp), phi3 (fused QKV and gate-up matrices; arch_phi3.cpp), smollm3 (layers
// without RoPE; arch_smollm3.cpp) and mistral3 (attention temperature; arch_mistral3.cpp), which
// build it from this file.
#pragma once

#include <memory>
#include <vector>

#include "model/architecture.h"
#include "model/decoder_buffers.h"
#include "model/moe_ffn.h"

namespace fluoro {

struct LlamaOptions {
    RopeMode rope_mode = RopeMode::Norm;
    bool qkv_bias = false;  // attn_{q,k,v}.bias (qwen2)
    bool qk_norm = false;   // attn_{q,k}_norm.weight: RMSNorm over each head before RoPE (qwen3)
    // With qk_norm: the norms span the whole Q and K projections instead of each head (olmoe).
    bool qk_norm_whole = false;
    // rope_freqs.weight, llama3's per-pair frequency divisors (optional; llama only: llama.cpp
    // reads it for llama, so a qwen file holding it is refused as an unknown tensor).
    bool rope_freqs = false;
    // Granite's multipliers from Hparams (embedding, residual, attention and logit scales).
    bool granite_scales = false;
    // phi3: Q, K and V may come stacked in one attn_qkv.weight, and the gate and up projections
    // always come stacked in ffn_up.weight (gate rows first); both are split into ordinary
    // weights at load (WeightBinder::optional_split), so the forward pass is the llama one.
    bool phi3_fused = false;
    // A file with experts (Hparams::n_expert > 0) gets the mixture-of-experts FFN (moe_ffn.h)
    // instead of ffn_gate/up/down: each expert moe_ff wide (0: feed_forward_length), its k
    // weights renormalised to sum 1 when moe_norm_weights (Mixtral, Qwen3-MoE; not OLMoE).
    int64_t moe_ff = 0;
    bool moe_norm_weights = true;
    // smollm3: every n-th layer (il + 1 a multiple of it) applies no RoPE at all (0: none skip).
    int64_t no_rope_layer_step = 0;
    // mistral3: llama 4's attention temperature from Hparams::attn_temp_scale (0: off).
    bool attn_temperature = false;
};

class LlamaArchitecture : public Architecture {
  public:
    explicit LlamaArchitecture(const Hparams& hp, LlamaOptions options = {});
    void bind(const WeightBinder& w) override;
    void reserve(Backend& backend, int64_t max_tokens, int64_t max_logit_rows) override;
    Act forward(Backend& backend, const Batch& batch, KvCache& kv) override;
    KvShape kv_shape() const override;
    RopeParams layer_rope(int64_t il) const override;
    void set_expert_sink(ExpertChoices* sink) override;

  private:
    struct Layer {
        Weight attn_norm, wq, wk, wv, wo, bq, bk, bv;  // wq: (n_embd -> n_head*hd)
        Weight q_norm, k_norm;                         // (hd), qk_norm only
        Weight ffn_norm, gate, up, down;               // gate/up: (n_embd -> n_ff)
    };

    bool layer_has_rope(int64_t il) const;
    // mistral3: q *= 1 + attn_temp_scale * ln(1 + floor(pos / rope_n_ctx_orig)), row by row.
    void scale_queries_by_position(Backend& be, Act q, const Batch& b) const;

    Hparams hp_;
    LlamaOptions opt_;
    Weight token_embd_, output_norm_, output_;  // output_ = token_embd_ when tied
    Weight rope_freqs_;                         // (n_rot / 2), absent unless llama3 scaling
    std::vector<Layer> layers_;
    std::unique_ptr<MoeFfn> moe_;  // files with experts only
    DecoderBuffers buf_;
};

}  // namespace fluoro
