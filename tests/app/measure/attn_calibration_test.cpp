// Calibration (measure/attn_calibration.h): the Gram of each layer's attention input is what the
// model computes there — layer 0's is the text's normed token embeddings, checked against the
// file's own numbers — and a converter fitted to it reproduces the model on that text better than
// one fitted to the weights: an MLA latent of rank 16 of 48 (activation-aware SVD), and the
// aligned KV-head merge (its miss on the text never above the mean's).
#include "measure/attn_calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "backend/cpu/cpu_backend.h"
#include "engine/model/fixture_forward.h"
#include "eval/window_logits.h"
#include "gguf/gguf_file.h"
#include "gguf/test_model.h"
#include "measure/eval_text.h"
#include "model/convert_math.h"
#include "model/hparams.h"
#include "model/kv_head_merge.h"
#include "model/mla_convert.h"
#include "model/model.h"
#include "test_temp.h"

namespace fluoro::app {
namespace {

class AttnCalibrationTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        gguf::TestModelSpec spec;  // llama: 2 layers, n_embd 64, 4 query heads over 2 KV of 16
        model_ = new std::filesystem::path(test::unique_temp_path("calib_llama.gguf"));
        gguf::write_test_model(*model_, spec);
        // Few distinct words, over and over: inputs of low rank, which a fit to them can use.
        text_ = new std::filesystem::path(test::unique_temp_path("calib_text.txt"));
        std::ofstream out(*text_);
        for (int i = 0; i < 200; ++i) out << "the cat sat on the mat and the dog sat on the log. ";
    }
    static void TearDownTestSuite() {
        std::filesystem::remove(*model_);
        std::filesystem::remove(*text_);
        delete model_;
        delete text_;
    }
    static AttnCalibrationOptions options() {
        AttnCalibrationOptions o;
        o.text = *text_;
        o.tokens = 512;
        o.chunk = 256;
        o.threads = 2;
        return o;
    }
    // The windows the calibration ran (text_windows of its tokens), and their logits under `path`.
    static std::vector<std::vector<int32_t>> windows() {
        cpu::CpuBackend be(1);
        const auto m = Model::load(*model_, be);
        std::vector<int32_t> ids = eval_text_tokens(*m, read_eval_text(*text_));
        ids.resize(512);
        return text_windows(*m, ids, 256, 0);
    }
    static std::filesystem::path* model_;
    static std::filesystem::path* text_;
};
std::filesystem::path* AttnCalibrationTest::model_ = nullptr;
std::filesystem::path* AttnCalibrationTest::text_ = nullptr;

// Layer 0's input is RMSNorm(embedding) x attn_norm for each token the windows hold: its Gram,
// computed here in double from the file, equals the calibration's within float rounding (the
// engine's norm rounds each value to F32, 2^-24 relative; sums of 512 products keep that, so
// 1e-5 of the largest entry leaves an order of magnitude). The constant column's corner is the
// count over itself, exactly 1.
TEST_F(AttnCalibrationTest, LayerZeroIsTheTextsNormedEmbeddings) {
    const AttnCalibration c = calibrate_attn_inputs(*model_, options());
    ASSERT_EQ(c.gram.layers.size(), 2u);
    EXPECT_EQ(c.gram.n_embd, 64);
    EXPECT_EQ(c.gram.tokens, 512);
    EXPECT_GT(c.ppl, 1.0);
    const int64_t d = 64, w = d + 1;
    const gguf::GgufFile f = gguf::GgufFile::open(*model_);
    const Hparams hp = read_hparams(f);
    const std::vector<float> embd = tensor_values(f, *f.find_tensor("token_embd.weight"));
    const std::vector<float> norm = tensor_values(f, *f.find_tensor("blk.0.attn_norm.weight"));
    std::vector<double> want(size_t(w * w), 0.0);
    int64_t n = 0;
    for (const auto& window : windows())
        for (const int32_t t : window) {
            std::vector<double> y(size_t(w), 1.0);
            double ms = 0;
            for (int64_t i = 0; i < d; ++i)
                ms += double(embd[size_t(t * d + i)]) * embd[size_t(t * d + i)];
            const double scale = 1.0 / std::sqrt(ms / double(d) + hp.rms_eps);
            for (int64_t i = 0; i < d; ++i)
                y[size_t(i)] = embd[size_t(t * d + i)] * scale * norm[size_t(i)];
            for (int64_t i = 0; i < w; ++i)
                for (int64_t j = 0; j < w; ++j)
                    want[size_t(i * w + j)] += y[size_t(i)] * y[size_t(j)];
            ++n;
        }
    ASSERT_EQ(n, 512);
    double top = 0, worst = 0;
    for (double& x : want) top = std::max(top, std::abs(x /= double(n)));
    const std::vector<double>& got = c.gram.layers[0];
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
    EXPECT_LT(worst, 1e-5 * top) << "largest entry " << top;
    EXPECT_EQ(got[size_t(d * w + d)], 1.0);
    for (int64_t i = 0; i < w; ++i)
        for (int64_t j = 0; j < i; ++j) EXPECT_EQ(got[size_t(i * w + j)], got[size_t(j * w + i)]);
    // Later layers see what attention mixed in: another Gram.
    EXPECT_NE(c.gram.layers[1], c.gram.layers[0]);
    // Skipping tokens reads others; a text shorter than one chunk is refused by name.
    AttnCalibrationOptions o = options();
    o.skip = 100;
    EXPECT_NE(calibrate_attn_inputs(*model_, o).gram.layers[0], got);
    o.skip = 100000;
    try {
        calibrate_attn_inputs(*model_, o);
        ADD_FAILURE() << "a text of no tokens calibrated";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("fewer than one chunk"), std::string::npos)
            << e.what();
    }
}

// MLA at rank 16 of the 48 rows of position-free keys and values (4 of 8 pairs rotary): fitted to
// the calibration text's keys and values, the converted model's logits on that text stay closer
// to the original's than with the latent fitted to the weights — by more than half (measured: see
// the printout), since the text's inputs span few directions that a rank-16 latent can hold.
// The aligned merge fitted to the text misses no more of the keys and values there than the mean.
TEST_F(AttnCalibrationTest, FitsToTheTextReproduceTheModelOnIt) {
    const AttnCalibration c = calibrate_attn_inputs(*model_, options());
    const std::vector<int32_t> ids = windows()[0];
    const std::vector<float> want = test::file_logits(*model_, ids, 64, 256);
    const auto plain = test::unique_temp_path("calib_mla_plain.gguf");
    const auto fitted = test::unique_temp_path("calib_mla_fitted.gguf");
    MlaConvertOptions mo;
    mo.rank = 16;
    mo.rope_pairs = 4;
    convert_to_mla(*model_, plain, mo);
    mo.calibration = &c.gram;
    EXPECT_TRUE(convert_to_mla(*model_, fitted, mo).calibrated);
    const double e_plain = test::nrmse(test::file_logits(plain, ids, 64, 256), want);
    const double e_fitted = test::nrmse(test::file_logits(fitted, ids, 64, 256), want);
    std::printf("[calibration] MLA rank 16: logits nrmse on the text %.4f (weights) %.4f (text)\n",
                e_plain, e_fitted);
    EXPECT_LT(e_fitted, 0.5 * e_plain);
    const KvHeadMergeReport r = merge_kv_heads(*model_, plain, 2, KvMergeRule::Aligned, &c.gram);
    EXPECT_TRUE(r.calibrated);
    EXPECT_LE(r.key_miss, r.key_miss_mean);
    EXPECT_LE(r.value_miss, r.value_miss_mean);
    std::filesystem::remove(plain);
    std::filesystem::remove(fitted);
}

}  // namespace
}  // namespace fluoro::app
