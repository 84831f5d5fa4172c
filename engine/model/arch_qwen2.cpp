// qwen2: the llama layer with biases on Q, K and V, and NEOX (half-split) RoPE — its tensors
// are not permuted by the GGUF converter, unlike llama's.
#include "model/arch_llama.h"
#include "model/architecture.h"

namespace fluoro {

std::unique_ptr<Architecture> make_qwen2(const Hparams& hp) {
    LlamaOptions o;
    o.rope_mode = RopeMode::Neox;
    o.qkv_bias = true;
    return std::make_unique<LlamaArchitecture>(hp, o);
}

}  // namespace fluoro
