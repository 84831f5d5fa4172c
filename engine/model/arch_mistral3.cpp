// mistral3 (the text model of Ministral 3): the llama layer (llama3's rope_freqs tensor allowed;
// YaRN with its rope.scaling.yarn_log_multiplier, decoder_rope) with llama 4's attention
// temperature: when attention.temperature_scale is set, queries at
// position p are scaled by 1 + scale * ln(1 + floor(p / original_context_length)) after RoPE,
// so that attention sharpens past the original context. Dense files only (expert_count is
// refused, as for any dense decoder); the optional output/FFN biases llama.cpp reads are refused
// as unknown tensors by the weight binder.
#include "model/arch_llama.h"
#include "model/architecture.h"

namespace fluoro {

std::unique_ptr<Architecture> make_mistral3(const Hparams& hp) {
    LlamaOptions o;
    o.rope_freqs = true;
    o.attn_temperature = true;
    return std::make_unique<LlamaArchitecture>(hp, o);
}

}  // namespace fluoro
