// qwen3 (Qwen3 0.6B-32B dense): the llama layer without QKV biases, with an RMSNorm over each
// head of Q and of K (attn_q_norm / attn_k_norm, head_dim weights) before NEOX RoPE. Its head
// size is its own (qwen3.attention.key_length: 128 while n_embd / n_head is 64 for 0.6B), so
// Q is (n, n_head * head_dim) and attn_output maps n_head * head_dim back to n_embd.
#include "model/arch_llama.h"
#include "model/architecture.h"

namespace fluoro {

std::unique_ptr<Architecture> make_qwen3(const Hparams& hp) {
    LlamaOptions o;
    o.rope_mode = RopeMode::Neox;
    o.qk_norm = true;
    return std::make_unique<LlamaArchitecture>(hp, o);
}

}  // namespace fluoro
