// The attention-variant lab behind `fluoro eval attn` and the window's Measure ▸ Attention
// variants: one model's variants — the file as it is; its KV heads merged into one by their mean
// (MQA, model/kv_head_merge.h); its conversions to latent attention at the ranks asked for (MLA,
// model/mla_convert.h) — written to temporary files or kept in a directory; any other file given
// by name, such as a conversion of one's own — each measured at each KV storage type
// by the KV eval's loops (eval/kv_eval.h) under the full policy: the KV bytes per token the
// engine's cache stores, perplexity on the eval text, passkey retrieval, decode tok/s at long
// context. Nothing is fine-tuned: the papers these conversions come from (GQA's mean-pooling,
// MHA2MLA, TransMLA) fine-tune after converting; the results say what a training-free conversion
// costs ("fine_tuned": false in the JSON).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "eval/kv_eval.h"

namespace fluoro::app {

struct AttnEvalOptions {
    std::filesystem::path model;
    // Other variants, (name, file), measured after the file and its merge.
    std::vector<std::pair<std::string, std::filesystem::path>> extra;
    bool mqa = true;  // measure the MQA merge (when the file has > 1 KV head)
    // MLA conversions to measure (model/mla_convert.h), one per latent rank, each keeping
    // `mla_rope_pairs` rotary pairs per KV head (0: head_dim / 8).
    std::vector<int64_t> mla_ranks;
    int64_t mla_rope_pairs = 0;
    // The aligned merge and the MLA conversions fit to the keys and values the model produces on
    // this many tokens of the text, read after every token a task scores (measure/
    // attn_calibration.h); 0: they fit to the weights.
    int64_t calibrate_tokens = 2048;
    std::filesystem::path keep_dir;  // empty: the merge goes to a temporary file, removed
    std::filesystem::path text;      // empty: the Bible text (measure/eval_text.h)
    // The grid: kv_types, tasks and their lengths; policies and budgets are set to full at 100%.
    KvEvalPlan plan;
    std::string passkey_format = "auto";  // auto, chat or plain (per variant's template)
    int threads = 0;
    int64_t batch = 512;
};

// "NAME=FILE" specs → (name, file); throws Error naming `flag` and the bad spec.
std::vector<std::pair<std::string, std::filesystem::path>> parse_variant_specs(
    const std::vector<std::string>& specs, const std::string& flag);

// Runs every variant (progress(message) before each measurement and each merge or load) and
// returns the result as JSON: model, text, ppl_tokens, fine_tuned, threads, calibration (text,
// skip, tokens, ppl; null when the conversions fit to the weights), and "variants": per
// variant its name, file ("" for a temporary merge), attention ("MHA", "GQA", "MQA", "MLA"),
// query_heads_per_kv_head, latent_rank, kv_bytes_per_token per KV type, and the KV eval's cells
// (measure_json.h). Throws Error for a file that cannot be merged or loaded.
nlohmann::json run_attn_eval(const AttnEvalOptions& opt,
                             const std::function<void(const std::string&)>& progress = {});

}  // namespace fluoro::app
