// Model hyperparameters read from GGUF metadata (`<arch>.*` keys), validated once so every later
// consumer (forward passes, KV sizing, `fluoro info`) can trust them. Scalar-or-per-layer keys
// (head counts, FFN width) are expanded to one entry per layer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fluoro::gguf {
class GgufFile;
}

namespace fluoro {

struct Hparams {
    std::string arch;                 // general.architecture
    uint64_t n_ctx_train = 0;         // <arch>.context_length
    uint64_t n_embd = 0;              // <arch>.embedding_length
    uint64_t n_layer = 0;             // <arch>.block_count
    std::vector<uint64_t> n_head;     // per layer
    std::vector<uint64_t> n_head_kv;  // per layer (defaults to n_head)
    std::vector<uint64_t> n_ff;       // per layer
    uint64_t head_dim_k = 0;          // key_length, default n_embd / n_head
    uint64_t head_dim_v = 0;          // value_length, default n_embd / n_head
    uint64_t n_rot = 0;               // rope.dimension_count, default head_dim_k
    double rope_freq_base = 10000.0;  // rope.freq_base
    double rope_freq_scale = 1.0;     // 1 / rope.scaling.factor (or scale_linear); 1 under "none"
    std::string rope_scaling_type;    // rope.scaling.type ("" = none): none, linear or yarn
    double rope_attn_factor = 1.0;    // rope.scaling.attn_factor (magnitude of the rotation)
    uint64_t rope_n_ctx_orig = 0;     // rope.scaling.original_context_length, default n_ctx_train
    double yarn_ext_factor = 0.0;     // 1 under yarn (or rope.scaling.yarn_ext_factor), else 0
    double yarn_beta_fast = 32.0;     // rope.scaling.yarn_beta_fast
    double yarn_beta_slow = 1.0;      // rope.scaling.yarn_beta_slow
    // rope.scaling.yarn_log_multiplier (0 = absent; mistral3 only: Ministral 3's converter writes
    // 1 or 0): with it the rotations' YaRN magnitude 1 + 0.1 ln(s) is divided by
    // 1 + 0.1 * it * ln(s), as llama.cpp does (decoder_rope), so 1 leaves them unscaled.
    double yarn_log_mul = 0.0;
    std::optional<double> rope_freq_base_swa;  // rope.freq_base_swa (gemma3's local layers)
    double rms_eps = 0;                        // attention.layer_norm_rms_epsilon
    uint64_t n_vocab = 0;                      // <arch>.vocab_size or tokenizer token count
    uint64_t sliding_window = 0;               // attention.sliding_window (0 = none)
    bool rope_finetuned = true;  // rope.scaling.finetuned (granite: false = layers without RoPE)
    // Granite's multipliers (granite only: other architectures refuse these keys).
    std::optional<double> embedding_scale;  // embedding_scale: embeddings *= it
    std::optional<double> residual_scale;   // residual_scale: each block's output *= it
    std::optional<double> attention_scale;  // attention.scale: q·k scale instead of 1/sqrt(hd)
    std::optional<double> logit_scale;      // logit_scale: logits /= it
    // attention.temperature_scale (mistral3; 0 = off): llama 4's attention temperature, queries at
    // position p scaled by 1 + it * ln(1 + floor(p / rope_n_ctx_orig)).
    double attn_temp_scale = 0;
    std::optional<double> final_logit_softcap;
    std::optional<double> attn_logit_softcap;
    std::optional<uint64_t> file_type;  // general.file_type (llama_ftype)
    // Mixture of experts (0 = a dense model): expert_count, expert_used_count (the top k each
    // token is routed to) and expert_feed_forward_length (0 = absent: the architecture decides,
    // llama and olmoe use feed_forward_length, qwen3moe feed_forward_length / expert_used_count).
    uint64_t n_expert = 0;
    uint64_t n_expert_used = 0;
    uint64_t n_ff_exp = 0;
    // deepseek2's multi-head latent attention and its mixture (arch_deepseek2.cpp; other
    // architectures refuse these keys): attention.q_lora_rank (0: Q projected directly),
    // attention.kv_lora_rank (the latent), attention.key_length_mla / value_length_mla (a head's
    // key and value sizes when the file is in the MLA form, where key_length / value_length are
    // the latent's; 0: an older file, whose key_length / value_length are the heads'),
    // leading_dense_block_count (layers with a dense FFN before the experts'),
    // expert_shared_count, expert_weights_scale (0: absent), expert_weights_norm and
    // expert_gating_func (0 absent, 1 softmax, 2 sigmoid).
    uint64_t q_lora_rank = 0;
    uint64_t kv_lora_rank = 0;
    uint64_t head_dim_k_mla = 0;
    uint64_t head_dim_v_mla = 0;
    uint64_t n_layer_dense_lead = 0;
    uint64_t n_expert_shared = 0;
    double expert_weights_scale = 0;
    bool expert_weights_norm = false;
    uint64_t expert_gating_func = 0;
    // Group-limited routing (DeepSeek-V3): the experts in expert_group_count equal groups, a
    // token's k chosen among the expert_group_used_count groups whose two best experts score
    // highest (0 or 1 group: no limit).
    uint64_t n_expert_groups = 0;
    uint64_t n_group_used = 0;

    // Bytes of K and V for one token across all layers at the given element size (2 = F16), from
    // the file's head counts (what a latent-attention model caches is its architecture's
    // kv_shape(), not this).
    uint64_t kv_bytes_per_token(uint64_t elem_bytes = 2) const;
};

// Reads and validates the hyperparameters. Throws FormatError naming the key when a required
// key is missing or a value is inconsistent (zero sizes, head count not dividing, ...).
Hparams read_hparams(const gguf::GgufFile& file);

// Name of a llama_ftype (general.file_type), e.g. 3 -> "Q4_1", 15 -> "Q4_K_M".
std::string file_type_name(uint64_t ftype);

}  // namespace fluoro
