// convert_to_mla (model/mla_convert.h): a GQA llama rewritten as fluoro's MLA variant of
// deepseek2. Exact where it must be — at full rank, with every rotary pair that carries weight
// kept rotary, the latent spans the keys and values and the converted model computes what the
// original does, on both MLA paths — lossy in order below that, and refused where it cannot be
// done.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "engine/model/fixture_forward.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "gguf/test_model.h"
#include "model/hparams.h"
#include "model/mla_convert.h"
#include "model/model.h"
#include "tensor/dequantize.h"
#include "test_temp.h"

namespace fluoro {
namespace {

// A random F32 llama (2 layers, 4 query heads over 2 KV heads of 16 dims: 8 rotary pairs each)
// whose keys' slowest rotary pair (pair 7) is zero in every KV head of every layer: its rotation
// never matters, so converting it to a position-free dim changes nothing. Both rules drop it:
// the slowest pair, the pair of zero weight norm. `zero_pairs` = 0 leaves the keys as written.
std::filesystem::path llama_model(int zero_pairs) {
    const auto raw = test::unique_temp_path("mla_src_raw.gguf");
    gguf::TestModelSpec spec;
    spec.n_embd = 64;
    spec.n_head = 4;
    spec.n_head_kv = 2;
    gguf::write_test_model(raw, spec);
    const gguf::GgufFile f = gguf::GgufFile::open(raw);
    gguf::GgufWriter w;
    w.set_alignment(f.alignment());
    for (const gguf::KeyValue& kv : f.metadata())
        if (kv.key != "general.alignment") w.add(kv.key, kv.value);
    for (const gguf::TensorInfo& t : f.tensors()) {
        std::vector<uint64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
        if (!t.name.ends_with("attn_k.weight")) {
            w.add_tensor(t.name, t.type, ne, f.tensor_data(t));
            continue;
        }
        std::vector<float> v(size_t(t.n_elements));
        dequantize_row(t.type, f.tensor_data(t).data(), v.data(), int64_t(v.size()));
        for (int64_t g = 0; g < 2; ++g)  // rows 2j, 2j+1 of each 16-row head
            for (int64_t j = 8 - zero_pairs; j < 8; ++j)
                for (int64_t r = 0; r < 2; ++r)
                    std::fill_n(v.begin() + (g * 16 + 2 * j + r) * 64, 64, 0.0f);
        w.add_tensor_f32(t.name, ne, v);
    }
    const auto path = test::unique_temp_path("mla_src.gguf");
    w.write(path);
    return path;
}

const std::vector<int32_t> kIds = {1, 17, 42, 7, 99, 3, 250, 31, 8, 64, 5, 120, 77, 2, 19, 300};

std::vector<float> logits_of(const std::filesystem::path& path, MlaPath mla = MlaPath::Absorbed) {
    return test::file_logits(path, kIds, 16, 64, mla);
}

// Full rank: the 2 KV heads' 2 position-free key dims and 16 value dims each stack to 36 rows,
// so rank 36 keeps the whole matrix. The remaining difference is float32 rounding: sums reordered
// through the latent (about sqrt(64) ulps per projection), the query scale rounded once, RoPE
// angles through frequency factors (positions < 16: under 1e-5 rad) — two layers keep that near
// 1e-6; 1e-4 leaves room and is two orders below what one wrong pair costs (the control).
TEST(MlaConvert, FullRankWithEveryWeightedPairRotaryIsTheSameModel) {
    const auto src = llama_model(1);
    const auto out = test::unique_temp_path("mla_full.gguf");
    const MlaConvertReport r = convert_to_mla(src, out, {36, 7, {}});
    EXPECT_EQ(r.rope_dims, 28);  // 2 KV heads x 7 pairs x 2
    EXPECT_EQ(r.nope_dims, 2);
    EXPECT_EQ(r.kv_elements_before, 64);      // 2 x 2 heads x 16
    EXPECT_EQ(r.kv_elements_after, 28 + 36);  // the RoPE key and the latent, once
    EXPECT_NEAR(r.energy_min, 1.0, 1e-12);
    EXPECT_FALSE(r.calibrated);
    const gguf::GgufFile f = gguf::GgufFile::open(out);
    EXPECT_EQ(f.get_string("general.architecture"), "deepseek2");
    const Hparams hp = read_hparams(f);
    EXPECT_EQ(hp.kv_lora_rank, 36u);
    EXPECT_EQ(hp.n_rot, 28u);
    EXPECT_EQ(hp.head_dim_k, 30u);  // 2 NoPE + 28 rope
    EXPECT_EQ(f.find_tensor("blk.0.attn_kv_a_norm.weight"), nullptr);

    const std::vector<float> want = logits_of(src);
    for (const MlaPath path : {MlaPath::Absorbed, MlaPath::Naive}) {
        const double e = test::nrmse(logits_of(out, path), want);
        EXPECT_LT(e, 1e-4) << (path == MlaPath::Absorbed ? "absorbed" : "naive");
        std::printf("full rank, %s: nrmse %.3g\n", path == MlaPath::Absorbed ? "absorbed" : "naive",
                    e);
    }
    const auto by_norm = test::unique_temp_path("mla_full_norm.gguf");
    convert_to_mla(src, by_norm, {36, 7, {}, MlaPairRule::WeightNorm});
    EXPECT_LT(test::nrmse(logits_of(by_norm), want), 1e-4);
    // Control: calibration scores that rank the fastest pair (pair 0, one radian per position)
    // last turn a weighted pair position-free, and the logits move. (The slowest pair of a
    // model whose every pair carries weight is no control: over 16 positions it turns by
    // 16 x 10000^(-14/16) = 5e-3 rad, and dropping it moved the logits by 1.6e-4 — why S_high
    // drops the slow pairs.)
    const std::vector<std::vector<double>> fastest_last(2, [] {
        std::vector<double> s(16, 1.0);  // 2 KV heads x 8 pairs
        s[0] = s[8] = 0.0;
        return s;
    }());
    const auto out2 = test::unique_temp_path("mla_full_control.gguf");
    const MlaConvertReport rc = convert_to_mla(src, out2, {36, 7, fastest_last});
    EXPECT_TRUE(rc.calibrated);
    const double control = test::nrmse(logits_of(out2), want);
    std::printf("the fastest pair made position-free: nrmse %.3g\n", control);
    EXPECT_GT(control, 1e-2);
}

// Below full rank the latent loses the smallest directions first: less energy, larger errors.
TEST(MlaConvert, LowerRanksKeepLessAndDriftMore) {
    const auto src = llama_model(1);
    const std::vector<float> want = logits_of(src);
    double last_energy = 1.0 + 1e-9, last_error = 0;
    for (const int64_t rank : {36, 18, 6}) {
        const auto out = test::unique_temp_path("mla_rank.gguf");
        const MlaConvertReport r = convert_to_mla(src, out, {rank, 7, {}});
        const double e = test::nrmse(logits_of(out), want);
        std::printf("rank %lld: energy min %.4f mean %.4f, nrmse %.3g\n",
                    static_cast<long long>(rank), r.energy_min, r.energy_mean, e);
        EXPECT_LE(r.energy_mean, last_energy);
        EXPECT_GE(e, last_error);
        last_energy = r.energy_mean;
        last_error = e;
    }
    EXPECT_LT(last_energy, 0.9);
}

// --type q8_0: the projections whose rows are whole 32-value blocks are written as Q8_0 (attn_q and
// attn_kv_a_mqa, rows of n_embd 64; attn_kv_b's rows of the rank 36 stay F32), and the model is
// the F32 conversion within Q8_0's rounding: each weight moves by at most half a step of 1/127 of
// its block's largest, ~0.2 % RMS of a matmul's output; through 2 layers' Q, K and V that stays
// near 1 % of the RMS logit, so 3 % bounds it while a wrong dequantization would be of order 1.
TEST(MlaConvert, Q8OutputIsTheF32ConversionWithinItsRounding) {
    const auto src = llama_model(1);
    const auto f32 = test::unique_temp_path("mla_f32.gguf");
    const auto q8 = test::unique_temp_path("mla_q8.gguf");
    MlaConvertOptions o;
    o.rank = 36;
    o.rope_pairs = 7;
    convert_to_mla(src, f32, o);
    o.type = GgmlType::Q8_0;
    convert_to_mla(src, q8, o);
    const gguf::GgufFile f = gguf::GgufFile::open(q8);
    EXPECT_EQ(f.find_tensor("blk.0.attn_q.weight")->type, GgmlType::Q8_0);
    EXPECT_EQ(f.find_tensor("blk.0.attn_kv_a_mqa.weight")->type, GgmlType::Q8_0);
    EXPECT_EQ(f.find_tensor("blk.0.attn_kv_b.weight")->type, GgmlType::F32);  // rows of 36
    EXPECT_LT(std::filesystem::file_size(q8), std::filesystem::file_size(f32));
    for (const MlaPath path : {MlaPath::Absorbed, MlaPath::Naive}) {
        const double e = test::nrmse(logits_of(q8, path), logits_of(f32, path));
        std::printf("[mla q8_0] nrmse vs the F32 conversion: %.4f\n", e);
        EXPECT_GT(e, 0.0);
        EXPECT_LT(e, 0.03);
    }
    std::filesystem::remove(f32);
    std::filesystem::remove(q8);
}

TEST(MlaConvert, RefusesWhatItCannotConvert) {
    const auto src = llama_model(1);
    const auto out = test::unique_temp_path("mla_refused.gguf");
    auto message = [&](const std::filesystem::path& in, MlaConvertOptions o) -> std::string {
        try {
            convert_to_mla(in, out, o);
        } catch (const Error& e) {
            return e.what();
        }
        return "";
    };
    EXPECT_NE(message(src, {0, 7, {}}).find("rank 0"), std::string::npos);
    EXPECT_NE(message(src, {37, 7, {}}).find("1 to 36"), std::string::npos);
    EXPECT_NE(message(src, {8, 8, {}}).find("keep 1 to 7"), std::string::npos);
    EXPECT_NE(message(src, {8, 0, {}}).find("rope pairs 0"), std::string::npos);
    EXPECT_NE(message(src, {8, 7, {{1.0}}}).find("calibration scores"), std::string::npos);
    EXPECT_EQ(message(src, {8, 7, {}}), "");  // the same file converts with sound options
    gguf::TestModelSpec q;
    q.arch = "qwen2";
    const auto qwen = test::unique_temp_path("mla_qwen2.gguf");
    gguf::write_test_model(qwen, q);
    EXPECT_NE(message(qwen, {8, 7, {}}).find("implemented for llama"), std::string::npos);
    EXPECT_THROW(convert_to_mla(src, src, {8, 7, {}}), Error);  // would overwrite its input
}

}  // namespace
}  // namespace fluoro
