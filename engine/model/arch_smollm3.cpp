// smollm3: the llama layer whose every 4th layer (layers 3, 7, ...) applies no RoPE to its
// queries and keys ("NoPE" layers, attending by content alone). llama.cpp fixes the step at 4
// for this architecture; no metadata key carries it.
#include "model/arch_llama.h"
#include "model/architecture.h"

namespace fluoro {

std::unique_ptr<Architecture> make_smollm3(const Hparams& hp) {
    LlamaOptions o;
    o.no_rope_layer_step = 4;
    return std::make_unique<LlamaArchitecture>(hp, o);
}

}  // namespace fluoro
