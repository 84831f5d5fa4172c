// GQA -> fewer KV heads, training-free: a new GGUF whose attention layers share each group of
// `factor` neighbouring KV heads' key and value projections as one head (the query heads that
// read any of them read the merged one). Factor = head_count_kv gives MQA (one KV head). Two
// rules (KvMergeRule):
//  * mean: the mean of the group's rows of attn_k / attn_v (and of their biases), as Ainslie et
//    al. (GQA, 2023) build GQA checkpoints from MHA ones by mean-pooling before their uptraining;
//  * aligned: each head is first turned, by a transform the rest of the layer undoes exactly,
//    towards the others, and the aligned heads are averaged — after "Align attention heads
//    before merging them" (Jin et al., 2024), which aligns by orthogonal maps fitted on
//    activations before mean-pooling; here fitted on the weights alone. A key head's rotary pair
//    may be turned by any angle if its query heads' pair turns with it (RoPE commutes with a
//    rotation of the pair, and the score q·k is unchanged); a value head by any orthogonal map
//    if attn_output's columns for its query heads take the inverse. The angles and maps are
//    found by alternating, from each head turned onto the first: the merged head is the mean of
//    the aligned heads, each head's alignment the best fit to that mean (orthogonal Procrustes);
//    where that misses more of the heads than the mean does, the mean is kept. The fit is in the
//    weights' own metric, or with a calibration (AttnInputGram, model/convert_math.h) in the
//    metric of the layer's inputs on a text: the error of the keys and values it produces there.
//    A merged head is the mean of the aligned heads either way.
// Nothing is trained: the model loses what the heads did not share (docs/ARCHITECTURES.md
// measures it).
//
// Every other tensor and metadata key is copied byte for byte; head_count_kv is divided,
// general.name says what was done, and the rewritten matrices (the merged K and V; with the
// aligned rule also attn_q and attn_output) are written as F32 (a mean of quantized rows is not
// on the source type's grid; F32 keeps it exact) or, asked for, Q8_0 (`type`: a quarter of the
// bytes). For architectures whose attention is the llama
// layer's plain attn_q / attn_k / attn_v (llama, qwen2, qwen3, granite, mistral3, smollm3);
// anything else is refused by name, and the aligned rule where a per-dim norm of the queries or
// keys (qwen3's attn_q_norm / attn_k_norm) would not commute with turning a pair.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "model/convert_math.h"

namespace fluoro {

enum class KvMergeRule { Mean, Aligned };
std::string_view kv_merge_rule_name(KvMergeRule r);  // "mean", "aligned"

struct KvHeadMergeReport {
    std::string arch;
    int64_t layers = 0;
    int64_t kv_heads_before = 0, kv_heads_after = 0;
    int64_t tensors_merged = 0;  // K and V weights and biases
    // The share of the merged heads that the merged head misses, sum over heads of
    // |aligned head - merged|² / sum of |head|², for the rule used and for the mean rule; keys
    // and values apart. In the weights' metric, or with a calibration the share of the keys' and
    // values' squared values on its text.
    double key_miss = 0, value_miss = 0, key_miss_mean = 0, value_miss_mean = 0;
    bool calibrated = false;
};

// Reads `in`, writes `out` (replacing it). Throws Error/FormatError/UnsupportedError naming the
// file and what stops the merge (an architecture without plain K/V projections, a factor that
// does not divide head_count_kv, per-layer head counts that differ, out equal to in).
// With a calibration (the aligned rule only), its layers must match the file's (Error
// otherwise).
KvHeadMergeReport merge_kv_heads(const std::filesystem::path& in, const std::filesystem::path& out,
                                 int64_t factor, KvMergeRule rule = KvMergeRule::Mean,
                                 const AttnInputGram* calibration = nullptr,
                                 GgmlType type = GgmlType::F32);

}  // namespace fluoro
