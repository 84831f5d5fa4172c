// The mixture-of-experts families built on the llama layer (arch_llama.h) with the shared expert
// FFN (moe_ffn.h), as llama.cpp runs them (src/models/qwen3moe.cpp, olmoe.cpp):
//  * qwen3moe (Qwen3-30B-A3B, -235B-A22B): qwen3's attention (per-head Q/K RMSNorm, NEOX RoPE,
//    its own head size); experts expert_feed_forward_length wide (llama.cpp's fallback without
//    it: feed_forward_length / expert_used_count); the k weights renormalised to sum 1;
//  * olmoe (OLMoE-1B-7B): pre-norm llama attention with RMSNorm over the whole Q and K
//    projections, NEOX RoPE; experts feed_forward_length wide; the k weights are the softmax
//    probabilities as they are (not renormalised).
// Mixtral-style llama files (llama.expert_count > 0) are the llama architecture itself.
#include "core/error.h"
#include "model/arch_llama.h"
#include "model/architecture.h"

namespace fluoro {
namespace {

void require_experts(const Hparams& hp) {
    if (hp.n_expert == 0)
        throw FormatError("metadata key '" + hp.arch + ".expert_count' is missing or 0: " +
                          hp.arch + " is a mixture of experts");
}

}  // namespace

std::unique_ptr<Architecture> make_qwen3moe(const Hparams& hp) {
    require_experts(hp);
    LlamaOptions o;
    o.rope_mode = RopeMode::Neox;
    o.qk_norm = true;
    o.moe_ff = hp.n_ff_exp ? int64_t(hp.n_ff_exp) : int64_t(hp.n_ff[0] / hp.n_expert_used);
    o.moe_norm_weights = true;
    return std::make_unique<LlamaArchitecture>(hp, o);
}

std::unique_ptr<Architecture> make_olmoe(const Hparams& hp) {
    require_experts(hp);
    LlamaOptions o;
    o.rope_mode = RopeMode::Neox;
    o.qk_norm = true;
    o.qk_norm_whole = true;
    o.moe_norm_weights = false;
    return std::make_unique<LlamaArchitecture>(hp, o);
}

}  // namespace fluoro
