// merge_kv_heads (model/kv_head_merge.h): GQA's KV heads merged into fewer by their mean, or
// aligned first. Exact where it must be — a model whose grouped KV heads are already equal is the
// same model with one head per group, so its logits must not move, and one whose heads are one
// head turned two ways is too for the aligned rule — and refused where it cannot be done.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "engine/model/fixture_forward.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/convert_math.h"
#include "model/kv_head_merge.h"
#include "model/model.h"
#include "tensor/dequantize.h"
#include "test_models.h"
#include "test_temp.h"

namespace fluoro {
namespace {

// `fixture` with every layer's attention rewritten as F32 by edit(name, values) — attn_q, attn_k,
// attn_v, attn_output and their biases where the file has them.
std::filesystem::path with_attention(
    const std::string& fixture, const std::string& out_name,
    const std::function<void(const std::string&, std::vector<float>&)>& edit) {
    const gguf::GgufFile f = gguf::GgufFile::open(test::fixtures_dir() / (fixture + ".gguf"));
    gguf::GgufWriter w;
    w.set_alignment(f.alignment());
    for (const gguf::KeyValue& kv : f.metadata())
        if (kv.key != "general.alignment") w.add(kv.key, kv.value);
    for (const gguf::TensorInfo& t : f.tensors()) {
        std::vector<uint64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
        const bool attn = t.name.find(".attn_q.") != std::string::npos ||
                          t.name.find(".attn_k.") != std::string::npos ||
                          t.name.find(".attn_v.") != std::string::npos ||
                          t.name.find(".attn_output.") != std::string::npos;
        if (!attn) {
            w.add_tensor(t.name, t.type, ne, f.tensor_data(t));
            continue;
        }
        std::vector<float> v(size_t(t.n_elements));
        dequantize_row(t.type, f.tensor_data(t).data(), v.data(), int64_t(v.size()));
        edit(t.name, v);
        w.add_tensor_f32(t.name, ne, v);
    }
    const auto path = test::unique_temp_path(out_name);
    w.write(path);
    return path;
}

// The fixtures below have 4 query heads over 2 KV heads of 16 dims (8 rotary pairs), n_embd 64.
constexpr int64_t kHd = 16, kEmbd = 64;

// Makes KV head 1 a copy of KV head 0 (keys, values and their biases): one head's worth.
void copy_head(const std::string& name, std::vector<float>& v) {
    if (name.find(".attn_k.") == std::string::npos && name.find(".attn_v.") == std::string::npos)
        return;
    const size_t half = v.size() / 2;  // 16 rows of n_embd, or 16 biases
    std::copy_n(v.begin(), half, v.begin() + int64_t(half));
}

// arch_llama_linear.gguf (2 layers, 4 query heads, 2 KV heads of 16) with every layer's second KV
// head made a copy of its first, the attention written as F32 (as the merge writes it, so both
// models multiply the same weights the same way).
std::filesystem::path equal_heads_model() {
    return with_attention("arch_llama_linear", "equal_kv_heads.gguf", copy_head);
}

std::vector<float> logits_of(const std::filesystem::path& path, const std::vector<int32_t>& ids) {
    return test::file_logits(path, ids, 64, 256);
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

// The same model written another way: KV head 1's rotary pair i turned by angle 0.4 + 0.9 i with
// its query heads (2 and 3) turned alike, so every score is unchanged; its values turned by an
// orthogonal R (a product of plane rotations) with attn_output's columns of heads 2 and 3 times
// Rᵀ, so every output is unchanged. `neox`: pairs (i, i + 8), else (2i, 2i + 1).
void turn_head(const std::string& name, std::vector<float>& v, bool neox) {
    const auto pair = [&](int64_t i) {
        return neox ? std::pair<int64_t, int64_t>{i, i + 8}
                    : std::pair<int64_t, int64_t>{2 * i, 2 * i + 1};
    };
    const auto turn_pairs = [&](int64_t head, int64_t width) {  // rows of `width` values
        for (int64_t i = 0; i < 8; ++i) {
            const auto [r0, r1] = pair(i);
            const double a = 0.4 + 0.9 * double(i), c = std::cos(a), s = std::sin(a);
            for (int64_t x = 0; x < width; ++x) {
                float& p = v[size_t((head * kHd + r0) * width + x)];
                float& q = v[size_t((head * kHd + r1) * width + x)];
                const double re = p, im = q;
                p = float(c * re - s * im);
                q = float(s * re + c * im);
            }
        }
    };
    // R = the product of rotations of dims (i, i+1) by 0.3 + 0.2 i, as a 16 x 16 matrix.
    std::vector<double> r(size_t(kHd * kHd), 0.0);
    for (int64_t i = 0; i < kHd; ++i) r[size_t(i * kHd + i)] = 1.0;
    for (int64_t i = 0; i + 1 < kHd; ++i) {
        const double a = 0.3 + 0.2 * double(i), c = std::cos(a), s = std::sin(a);
        for (int64_t k = 0; k < kHd; ++k) {
            const double x = r[size_t(i * kHd + k)], y = r[size_t((i + 1) * kHd + k)];
            r[size_t(i * kHd + k)] = c * x - s * y;
            r[size_t((i + 1) * kHd + k)] = s * x + c * y;
        }
    }
    const bool bias = name.ends_with(".bias");
    const int64_t width = bias ? 1 : kEmbd;
    if (name.find(".attn_k.") != std::string::npos) turn_pairs(1, width);
    if (name.find(".attn_q.") != std::string::npos) turn_pairs(2, width), turn_pairs(3, width);
    if (name.find(".attn_v.") != std::string::npos) {  // head 1's rows = R x head 0's rows
        std::vector<float> out(v.begin() + kHd * width, v.begin() + 2 * kHd * width);
        for (int64_t i = 0; i < kHd; ++i)
            for (int64_t x = 0; x < width; ++x) {
                double t = 0;
                for (int64_t k = 0; k < kHd; ++k)
                    t += r[size_t(i * kHd + k)] * v[size_t((kHd + k) * width + x)];
                out[size_t(i * width + x)] = float(t);
            }
        std::copy(out.begin(), out.end(), v.begin() + kHd * width);
    }
    if (name.find(".attn_output.") != std::string::npos)  // rows of 4 heads x 16: heads 2, 3
        for (int64_t y = 0; y < kEmbd; ++y)
            for (int64_t h = 2; h < 4; ++h) {
                float* col = v.data() + y * 4 * kHd + h * kHd;
                std::vector<double> t(static_cast<size_t>(kHd), 0.0);
                for (int64_t i = 0; i < kHd; ++i)
                    for (int64_t k = 0; k < kHd; ++k)
                        t[size_t(i)] += double(col[k]) * r[size_t(i * kHd + k)];
                for (int64_t i = 0; i < kHd; ++i) col[i] = float(t[size_t(i)]);
            }
}

// A random symmetric positive definite calibration Gram for every layer (inputs + 1).
AttnInputGram random_gram(int64_t layers) {
    AttnInputGram g;
    g.n_embd = kEmbd;
    g.tokens = 1;
    const int64_t w = kEmbd + 1;
    uint64_t state = 12345;
    const auto next = [&] {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return double(int64_t(state >> 33) % 2001 - 1000) / 1000.0;
    };
    for (int64_t il = 0; il < layers; ++il) {
        std::vector<double> a(size_t(w * w)), c(size_t(w * w), 0.0);
        for (double& x : a) x = next();
        for (int64_t i = 0; i < w; ++i)
            for (int64_t j = 0; j < w; ++j) {
                for (int64_t k = 0; k < w; ++k)
                    c[size_t(i * w + j)] += a[size_t(i * w + k)] * a[size_t(j * w + k)];
                if (i == j) c[size_t(i * w + j)] += 0.1;
            }
        g.layers.push_back(c);
    }
    return g;
}

struct TurnCase {
    const char* fixture;
    bool neox;  // qwen2: halves, with biases on q, k and v; llama: adjacent pairs
};

class AlignedMerge : public testing::TestWithParam<TurnCase> {};

// Two KV heads that are one head written two ways (turned pairs and values, their queries and
// outputs turned back): the aligned merge finds the turns and undoes them — the merged model is
// the original, within F32 rounding — in the weights' metric and in any calibration's, where the
// mean of the two ways is another model (the control). Tolerance: the turned model is the same
// function through other F32 roundings, and on these random fixtures that alone moves the logits
// by ~1e-4 of their RMS (measured: 1.8e-4 llama, 8e-5 qwen2) — the floor. The merged model is one
// more such rewriting (alignment settled to 1e-10, applied in double, rounded to F32 once), so it
// must land within a few floors (3x, plus 1e-5 for a floor that happens to be tiny), while the
// mean moves the logits by ~70 % of their RMS. The merged heads miss nothing (1e-10: squared
// rounding) where the mean misses a good share.
TEST_P(AlignedMerge, TurnedHeadsAreFoundAndTurnedBack) {
    const TurnCase c = GetParam();
    const auto one = with_attention(c.fixture, "one_head.gguf", copy_head);
    const auto turned = with_attention(c.fixture, "turned_head.gguf",
                                       [&](const std::string& n, std::vector<float>& v) {
                                           copy_head(n, v);
                                           turn_head(n, v, c.neox);
                                       });
    std::ifstream in(test::fixtures_dir() / (std::string(c.fixture) + ".json"));
    const std::vector<int32_t> ids = nlohmann::json::parse(in)["ids"];
    const std::vector<float> want = logits_of(one, ids);
    const double floor = test::nrmse(logits_of(turned, ids), want);
    EXPECT_LT(floor, 1e-3) << "the turned model is another model";
    const AttnInputGram gram = random_gram(2);
    for (const AttnInputGram* cal : {static_cast<const AttnInputGram*>(nullptr), &gram}) {
        const auto out = test::unique_temp_path("aligned.gguf");
        const KvHeadMergeReport r = merge_kv_heads(turned, out, 2, KvMergeRule::Aligned, cal);
        EXPECT_EQ(r.calibrated, cal != nullptr);
        EXPECT_LT(r.key_miss, 1e-10);
        EXPECT_LT(r.value_miss, 1e-10);
        EXPECT_GT(r.key_miss_mean, 0.01);
        EXPECT_GT(r.value_miss_mean, 0.01);
        const double aligned = test::nrmse(logits_of(out, ids), want);
        merge_kv_heads(turned, out, 2, KvMergeRule::Mean);
        const double mean = test::nrmse(logits_of(out, ids), want);
        std::printf(
            "[aligned merge %s%s] nrmse vs the one-head model: aligned %.2e, mean %.2e, the "
            "turned model itself %.2e\n",
            c.fixture, cal ? ", calibrated" : "", aligned, mean, floor);
        EXPECT_LT(aligned, 3 * floor + 1e-5);
        EXPECT_GT(mean, 0.01);
        std::filesystem::remove(out);
    }
    std::filesystem::remove(one);
    std::filesystem::remove(turned);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, AlignedMerge,
                         testing::Values(TurnCase{"arch_llama_linear", false},
                                         TurnCase{"arch_qwen2", true}));

// On heads that are not one head written twice, the aligned merge never misses more than the
// mean (it keeps the mean where aligning does not help), and it is refused where a per-dim norm
// of the queries or keys (qwen3) would not commute with turning a pair.
TEST(KvHeadMerge, AlignedMissesNoMoreThanTheMeanAndRefusesQkNorms) {
    const auto out = test::unique_temp_path("aligned_distinct.gguf");
    const KvHeadMergeReport r = merge_kv_heads(test::fixtures_dir() / "arch_llama_linear.gguf", out,
                                               2, KvMergeRule::Aligned);
    EXPECT_LE(r.key_miss, r.key_miss_mean);
    EXPECT_LE(r.value_miss, r.value_miss_mean);
    EXPECT_LT(r.value_miss, r.value_miss_mean);  // random heads: some turn always helps
    try {
        merge_kv_heads(test::fixtures_dir() / "arch_qwen3.gguf", out, 2, KvMergeRule::Aligned);
        ADD_FAILURE() << "qwen3's q/k norms were ignored";
    } catch (const UnsupportedError& e) {
        EXPECT_NE(std::string(e.what()).find("attn_q_norm"), std::string::npos) << e.what();
    }
    EXPECT_EQ(merge_kv_heads(test::fixtures_dir() / "arch_qwen3.gguf", out, 2).kv_heads_after, 1);
    AttnInputGram wrong = random_gram(1);  // 1 layer for 2
    EXPECT_THROW(merge_kv_heads(test::fixtures_dir() / "arch_llama_linear.gguf", out, 2,
                                KvMergeRule::Aligned, &wrong),
                 Error);
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
