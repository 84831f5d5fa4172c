// qwen2: the llama layer with biases on Q, K and V, and NEOX (half-split) RoPE — its tensors
// are not permuted by the GGUF converter, unlike llama's.
#include "model/arch_llama.h"
#include "model/architecture.h"

namespace fluoro {

std::unique_ptr<Architecture> make_qwen2(const Hparams& hp) {
    return std::make_unique<LlamaArchitecture>(hp, RopeMode::Neox, /*qkv_bias=*/true);
}

}  // namespace fluoro
