// phi3 (Phi-3 / Phi-3.5 mini and medium, Phi-4, Phi-4-mini): the llama layer with NEOX RoPE over
// the first rope.dimension_count dims of each head (partial rotary: Phi-4-mini rotates 96 of
// 128), Q, K and V stacked in one attn_qkv.weight (or three tensors) and the gate and up
// projections stacked in ffn_up.weight (gate rows first, then up: silu(gate) * up). The LM head
// may be tied to the embedding (Phi-4-mini).
//
// Sliding window: phi3.attention.sliding_window is accepted and not applied, as llama.cpp does
// (it disables Phi's sliding window: the converters' values are not reliable); it only matters
// past the window (2047 tokens for Phi-3-mini).
//
// LongRoPE (Phi-3-mini-128k, Phi-3.5-mini, Phi-4-mini): per-pair frequency divisors in
// rope_factors_long.weight / rope_factors_short.weight, chosen by the context size of each
// sequence against rope.scaling.original_context_length. Not implemented: the choice depends on
// the KV cache a model is run with, which an architecture here does not know. A file holding
// them is refused with that reason (before binding, so the message says why).
#include "core/error.h"
#include "gguf/gguf_file.h"
#include "model/arch_llama.h"
#include "model/architecture.h"
#include "model/weight_binder.h"

namespace fluoro {
namespace {

class Phi3Architecture final : public LlamaArchitecture {
  public:
    using LlamaArchitecture::LlamaArchitecture;
    void bind(const WeightBinder& w) override {
        for (const char* t : {"rope_factors_long.weight", "rope_factors_short.weight"})
            if (w.has(t))
                throw UnsupportedError(
                    w.file_name() + ": tensor '" + t +
                    "' is present: this phi3 model uses LongRoPE (per-dimension frequency "
                    "factors chosen by context length), which this engine does not implement, so "
                    "the model is refused");
        LlamaArchitecture::bind(w);
    }
};

}  // namespace

std::unique_ptr<Architecture> make_phi3(const Hparams& hp) {
    LlamaOptions o;
    o.rope_mode = RopeMode::Neox;
    o.phi3_fused = true;
    return std::make_unique<Phi3Architecture>(hp, o);
}

}  // namespace fluoro
