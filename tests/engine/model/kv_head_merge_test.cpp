// merge_kv_heads (model/kv_head_merge.h): GQA's KV heads merged into fewer by their mean. Exact
// where it must be — a model whose grouped KV heads are already equal is the same model with one
// head per group, so its logits must not move — and refused where it cannot be done.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "engine/model/fixture_forward.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/kv_head_merge.h"
#include "model/model.h"
#include "tensor/dequantize.h"
#include "test_models.h"
#include "test_temp.h"

namespace fluoro {
namespace {

// arch_llama_linear.gguf (2 layers, 4 query heads, 2 KV heads of 16) with every layer's second KV
// head made a copy of its first, K and V written as F32 (as the merge writes them, so both models
// multiply the same weights the same way).
std::filesystem::path equal_heads_model() {
    const gguf::GgufFile f = gguf::GgufFile::open(test::fixtures_dir() / "arch_llama_linear.gguf");
    gguf::GgufWriter w;
    w.set_alignment(f.alignment());
    for (const gguf::KeyValue& kv : f.metadata())
        if (kv.key != "general.alignment") w.add(kv.key, kv.value);
    for (const gguf::TensorInfo& t : f.tensors()) {
        std::vector<uint64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
        if (!t.name.ends_with("attn_k.weight") && !t.name.ends_with("attn_v.weight")) {
            w.add_tensor(t.name, t.type, ne, f.tensor_data(t));
            continue;
        }
        std::vector<float> v(size_t(t.n_elements));
        dequantize_row(t.type, f.tensor_data(t).data(), v.data(), int64_t(v.size()));
        const size_t head = v.size() / 2;  // 16 rows of n_embd
        std::copy_n(v.begin(), head, v.begin() + int64_t(head));
        w.add_tensor_f32(t.name, ne, v);
    }
    const auto path = test::unique_temp_path("equal_kv_heads.gguf");
    w.write(path);
    return path;
}

std::vector<float> logits_of(const std::filesystem::path& path, const std::vector<int32_t>& ids) {
    cpu::CpuBackend be(2);
    ModelLoadOptions opt;
    opt.max_batch = 64;
    opt.max_logit_rows = 64;
    const auto model = Model::load(path, be, opt);
    const auto kv = model->create_kv(256, 1, KvType::F32);
    return test::forward_in_chunks(*model, *kv, ids, 64);
}

TEST(KvHeadMerge, EqualHeadsMergeToTheSameModel) {
    const auto src = equal_heads_model();
    const auto out = test::unique_temp_path("merged_mqa.gguf");
    const KvHeadMergeReport r = merge_kv_heads(src, out, 2);
    EXPECT_EQ(r.kv_heads_before, 2);
    EXPECT_EQ(r.kv_heads_after, 1);
    EXPECT_EQ(r.tensors_merged, 4);  // K and V of 2 layers
    const gguf::GgufFile merged = gguf::GgufFile::open(out);
    EXPECT_EQ(merged.get_uint("llama.attention.head_count_kv"), 1u);
    EXPECT_NE(merged.get_string("general.name").value_or("").find("merged to 1"),
              std::string::npos);
    std::ifstream in(test::fixtures_dir() / "arch_llama_linear.json");
    const std::vector<int32_t> ids = nlohmann::json::parse(in)["ids"];
    const std::vector<float> a = logits_of(src, ids), b = logits_of(out, ids);
    ASSERT_EQ(a.size(), b.size());
    // The same weights, the same sums in the same order, each query head reading equal keys and
    // values (F32 cache: no rounding on the way in): equal logits.
    double max_abs = 0;
    for (size_t i = 0; i < a.size(); ++i)
        max_abs = std::max(max_abs, double(std::abs(a[i] - b[i])));
    EXPECT_EQ(max_abs, 0.0);
    std::filesystem::remove(src);
    std::filesystem::remove(out);
}

// Distinct heads do change the model: the merge is not a no-op on the fixture itself.
TEST(KvHeadMerge, DistinctHeadsChangeTheLogits) {
    const auto src = test::fixtures_dir() / "arch_llama_linear.gguf";
    const auto out = test::unique_temp_path("merged_distinct.gguf");
    merge_kv_heads(src, out, 2);
    std::ifstream in(test::fixtures_dir() / "arch_llama_linear.json");
    const std::vector<int32_t> ids = nlohmann::json::parse(in)["ids"];
    const std::vector<float> a = logits_of(src, ids), b = logits_of(out, ids);
    double max_abs = 0;
    for (size_t i = 0; i < a.size(); ++i)
        max_abs = std::max(max_abs, double(std::abs(a[i] - b[i])));
    EXPECT_GT(max_abs, 0.1);
    std::filesystem::remove(out);
}

TEST(KvHeadMerge, WhatCannotBeMergedIsRefusedByName) {
    const auto out = test::unique_temp_path("merged_refused.gguf");
    const auto message = [&](const std::filesystem::path& in, int64_t factor) {
        try {
            merge_kv_heads(in, out, factor);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    const auto fx = test::fixtures_dir();
    EXPECT_NE(message(fx / "arch_llama_linear.gguf", 3).find("cannot be merged in groups of 3"),
              std::string::npos);
    EXPECT_NE(message(fx / "arch_llama_linear.gguf", 1).find("groups of 1"), std::string::npos);
    EXPECT_NE(message(fx / "arch_phi3.gguf", 2).find("architecture 'phi3'"), std::string::npos);
    EXPECT_NE(message(fx / "arch_olmo2.gguf", 2).find("architecture 'olmo2'"), std::string::npos);
    ASSERT_EQ(merge_kv_heads(fx / "arch_llama_linear.gguf", out, 2).kv_heads_after, 1);
    // The output may not be the input.
    EXPECT_NE(message(out, 2).find("the output would overwrite the input"), std::string::npos);
    std::filesystem::remove(out);
}

}  // namespace
}  // namespace fluoro
