// GQA -> fewer KV heads, training-free: a new GGUF whose attention layers share each group of
// `factor` neighbouring KV heads' key and value projections as one head (the query heads that
// read any of them read the merged one). The merge of a group is the mean of its heads' rows of
// attn_k / attn_v (and of their biases), as Ainslie et al. (GQA, 2023) build GQA checkpoints from
// MHA ones by mean-pooling before their uptraining; nothing is trained here, so the model loses
// what the heads did not share (docs/ARCHITECTURES.md measures it). Factor = head_count_kv gives
// MQA (one KV head).
//
// Every other tensor and metadata key is copied byte for byte; head_count_kv is divided,
// general.name says what was done, and the merged matrices are written as F32 (a mean of quantized
// rows is not on the source type's grid; F32 keeps it exact). For architectures whose attention is
// the llama layer's plain attn_q / attn_k / attn_v (llama, qwen2, qwen3, granite, mistral3,
// smollm3, olmo2); anything else is refused by name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace fluoro {

struct KvHeadMergeReport {
    std::string arch;
    int64_t layers = 0;
    int64_t kv_heads_before = 0, kv_heads_after = 0;
    int64_t tensors_merged = 0;
};

// Reads `in`, writes `out` (replacing it). Throws Error/FormatError/UnsupportedError naming the
// file and what stops the merge (an architecture without plain K/V projections, a factor that
// does not divide head_count_kv, per-layer head counts that differ, out equal to in).
KvHeadMergeReport merge_kv_heads(const std::filesystem::path& in, const std::filesystem::path& out,
                                 int64_t factor);

}  // namespace fluoro
