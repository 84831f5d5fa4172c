// GQA -> MLA, training-free, after MHA2MLA (Ji et al., 2025) and TransMLA (Meng et al., 2025): a
// llama-architecture GGUF rewritten as a `deepseek2` one whose attention reads one latent per
// token, so the engine runs it on the absorbed path (arch_deepseek2.cpp) and caches rope +
// kv_lora_rank values per token and layer instead of 2 x n_head_kv x head_dim.
//
// Per layer, with head_dim d_h, KV heads g and the query heads h of each group:
//  1. Partial RoPE: of each KV head's d_h/2 rotary pairs, `rope_pairs` keep their rotation and
//     the others become position-free (NoPE) dims. Which: the fastest-turning pairs (MHA2MLA's
//     S_high; the default), or those with the largest ||W_Q h,j||·||W_K g,j|| summed over the
//     group and the layers (a data-free stand-in for MHA2MLA's 2-norm rule), or the caller's
//     calibration scores (MlaConvertOptions::pair_scores: Σ_h E|q_h,j|·|k_g,j| measured on a
//     text, MHA2MLA's 2-norm). One choice for the whole model (summed over the layers): the file
//     has one rope_freqs. On SmolLM2 at full rank, keeping 31 of 32 pairs: perplexity 3.55 with
//     the fastest (the file's: 3.57), 5.06 with the weight norms (docs/ARCHITECTURES.md).
//     deepseek2 has one RoPE key for all heads: it is the KV heads' kept pairs side by side
//     (rope dims = n_kv x 2 x rope_pairs); each query head's RoPE query fills its group's block
//     and is zero elsewhere. The pairs keep their own frequencies through per-pair frequency
//     factors (rope_freqs.weight, as llama 3's), which deepseek2 here reads.
//  2. Low-rank latent: the NoPE key rows and the value rows of every KV head, stacked (joint
//     KV), are approximated at rank `rank` by the top eigenvectors U of their Gram matrix (the
//     best rank-r approximation, Eckart–Young): the latent is c = Uᵀ W x (attn_kv_a_mqa's first
//     rows), each head's NoPE key and value are U's rows of its group times c (attn_kv_b, the
//     older single-tensor form).
//  3. Query rows are scaled by sqrt(nope + rope dims) / sqrt(d_h): deepseek2 divides scores by
//     the square root of its key size, llama by sqrt(d_h).
// There is no latent norm (attn_kv_a_norm): deepseek2's RMS norm of the latent would change
// each key's scale, so the file leaves it out and the engine skips it. Such a file (no latent
// norm, rope_freqs) is fluoro's MLA variant of deepseek2: llama.cpp refuses it. At full rank with
// every pair that matters rotary the converted model computes what the original does (tested);
// below that it loses what the papers then fine-tune back — nothing is trained here.
//
// For llama files whose attention is plain attn_q / attn_k / attn_v without biases, full rotary
// dims and no rope scaling (llama 3's rope_freqs are kept); anything else is refused by name. The
// output's other tensors and the tokenizer are copied byte for byte; the new matrices are F32.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "model/convert_math.h"

namespace fluoro {

// Which rotary pairs stay rotary without calibration scores: those whose query and key weights
// have the largest norms, or the fastest-turning ones (MHA2MLA's S_high).
enum class MlaPairRule { WeightNorm, HighFrequency };

struct MlaConvertOptions {
    int64_t rank = 0;        // kv_lora_rank: the latent's size per token and layer
    int64_t rope_pairs = 0;  // rotary pairs each KV head keeps (1 .. head_dim/2 - 1)
    // Optional calibration scores, [layer][kv_head x (head_dim/2) + pair]: higher keeps its
    // rotation first. Empty: the weight-norm proxy.
    std::vector<std::vector<double>> pair_scores;
    MlaPairRule pair_rule = MlaPairRule::HighFrequency;
    // A calibration (model/convert_math.h): the latent is then the best rank-R fit of the keys
    // and values the layers produce on its text (the top eigenvectors of W C Wᵀ rather than
    // W Wᵀ: an activation-aware SVD), and the norm rule scores a pair by the RMS of its query
    // and key on that text (MHA2MLA's 2-norm contribution) rather than by weight norms.
    const AttnInputGram* calibration = nullptr;
    // The written projections' type: F32 (exact) or Q8_0 (a quarter of the bytes, so the
    // converted model decodes faster; rows that are not whole 32-value blocks stay F32).
    GgmlType type = GgmlType::F32;
};

struct MlaConvertReport {
    int64_t layers = 0, rank = 0, rope_dims = 0, nope_dims = 0;
    // Values cached per token and layer: the file's K and V; the converted file's on the
    // absorbed path, the paper's rope + rank (the RoPE key and the latent, whose dims serve as
    // the values too: KvShape::v_in_k; the CUDA backend, or a value type other than the keys',
    // stores the latent a second time).
    int64_t kv_elements_before = 0, kv_elements_after = 0;
    // Share of the stacked NoPE-key/value matrix's energy (sum of squared singular values; with a
    // calibration, of the NoPE keys' and values' squares on its text) the
    // latent keeps: the least over the layers and the mean.
    double energy_min = 1, energy_mean = 1;
    bool calibrated = false;
};

// Reads `in`, writes `out` (replacing it). Throws Error / FormatError / UnsupportedError naming
// the file and what stops the conversion.
MlaConvertReport convert_to_mla(const std::filesystem::path& in, const std::filesystem::path& out,
                                const MlaConvertOptions& opt);

}  // namespace fluoro
