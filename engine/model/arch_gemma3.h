// Gemma 3: scaled embeddings, per-head q/k RMSNorm, post-attention and post-FFN norms, GELU-tanh
// gated FFN, and sliding-window layers (local RoPE base 10000) interleaved with global ones every
// sixth layer; the LM head is tied to the embedding.
//
// Gemma 2 (the same class, gemma2 = true): no q/k norms; every other layer local (0, 2, 4, ...:
// llama.cpp's pattern of 2), its window from gemma2.attention.sliding_window (default 4096) and
// its RoPE base the global one (rope.freq_base_swa if present); attention scores soft-capped,
// cap * tanh(score / cap), by gemma2.attn_logit_softcapping (default 50) and the logits by
// gemma2.final_logit_softcapping (default 30), as llama.cpp does when the keys are absent;
// queries scaled by 1/sqrt(key_length), except 1/sqrt(n_embd / n_head) for the 27B (46 layers),
// as Gemma's reference config and llama.cpp do.
#pragma once

#include <optional>
#include <vector>

#include "model/architecture.h"
#include "model/decoder_buffers.h"

namespace fluoro {

class Gemma3Architecture final : public Architecture {
  public:
    explicit Gemma3Architecture(const Hparams& hp, bool gemma2 = false)
        : hp_(hp), gemma2_(gemma2) {}
    void bind(const WeightBinder& w) override;
    void reserve(Backend& backend, int64_t max_tokens, int64_t max_logit_rows) override;
    Act forward(Backend& backend, const Batch& batch, KvCache& kv) override;
    KvShape kv_shape() const override;
    RopeParams layer_rope(int64_t il) const override;
    int64_t layer_window(int64_t il) const override { return is_global_layer(il) ? 0 : window(); }

    // Gemma 3's layer il uses the sliding window unless it is one of every sixth (5, 11, 17,
    // ...); Gemma 2's unless it is odd.
    bool is_global_layer(int64_t il) const { return gemma2_ ? il % 2 == 1 : il % 6 == 5; }
    int64_t window() const {
        return gemma2_ && hp_.sliding_window == 0 ? kGemma2Window : int64_t(hp_.sliding_window);
    }
    static constexpr double kLocalRopeBase = 10000.0;
    // Gemma 2's values when its file does not give them (llama.cpp's defaults).
    static constexpr double kGemma2AttnSoftcap = 50.0, kGemma2FinalSoftcap = 30.0;
    static constexpr int64_t kGemma2Window = 4096;

  private:
    struct Layer {
        Weight attn_norm, wq, wk, wv, wo, q_norm, k_norm, post_attn_norm;
        Weight ffn_norm, gate, up, down, post_ffn_norm;
    };

    Hparams hp_;
    bool gemma2_ = false;
    Weight token_embd_, output_norm_, output_;
    std::vector<Layer> layers_;
    DecoderBuffers buf_;
};

}  // namespace fluoro
