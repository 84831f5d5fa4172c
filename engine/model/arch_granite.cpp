// granite (IBM Granite 3.x dense): the llama layer (adjacent-pair RoPE, optional rope_freqs)
// with four multipliers from its metadata: embeddings *= granite.embedding_scale, each
// attention and FFN output *= granite.residual_scale before its residual add, q·k scaled by
// granite.attention.scale (instead of 1/sqrt(head_dim)), logits /= granite.logit_scale.
// Granite 4's layers without RoPE (rope.scaling.finetuned = false) and the MoE variants
// (expert_count > 0) are refused.
#include "core/error.h"
#include "model/arch_llama.h"
#include "model/architecture.h"

namespace fluoro {

std::unique_ptr<Architecture> make_granite(const Hparams& hp) {
    if (!hp.rope_finetuned)
        throw UnsupportedError(
            "metadata key 'granite.rope.scaling.finetuned' is false: granite layers without "
            "RoPE are not implemented here, so the model is refused");
    LlamaOptions o;
    o.rope_freqs = true;
    o.granite_scales = true;
    return std::make_unique<LlamaArchitecture>(hp, o);
}

}  // namespace fluoro
