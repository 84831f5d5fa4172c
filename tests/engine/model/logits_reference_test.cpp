// Final-position logits of both default models against the independent float64 reference
// (tests/reference/reference_forward.py: numpy + the gguf package's dequantizer; fixtures written
// by make_logits_fixtures.py). Our engine computes in float32 with activations quantized to Q8
// on the fly for the integer dot products (as llama.cpp does), so it cannot match float64 to the
// last digit; the tolerance is justified and reported in the test output:
//   * every compared logit within the model's bound of the reference after removing the common
//     offset of all logits (softmax ignores it), and the root-mean-square error after removing it
//     small;
//   * top-1 identical; at least 9 of our top-10 tokens in the reference's top 10, counting a token
//     whose reference logit is within twice the centered-RMS bound of the reference's 10th as
//     in it (a near tie: two logits that close may swap under errors of that size, and Gemma 3's
//     ranks 9-13 lie within 0.6 on the "history" prompt);
//   * the log-probabilities of the reference's top-10 tokens within kMaxLogProbErr.
// Both attention implementations (standard, flash) are held to the same bounds.
// The bounds come from llama.cpp run on the same files and prompts against the same reference
// (llama-cpp-python 0.3.36, measured when the fixtures were made): its worst logit error was 0.75
// on SmolLM2 and 2.28 on Gemma 3 (the 704-token prompt), its worst log-sum-exp error 0.72. The
// bounds are those figures with ~30% headroom: we must be about as exact as llama.cpp is.
// A log-probability is a logit less the log-sum-exp, so its error is at most the logit error plus
// the log-sum-exp error: llama.cpp's worst of each, 2.28 + 0.72, with the same headroom, 3.9.
// (The log-sum-exp alone was held to 1.0 until 2026-12-08; on Gemma 3's 704-token prompt it
// follows the common offset of all logits, which moves with float summation order alone: with
// the same matmul kernels the standard and flash attention gave offsets +0.35 and -1.13, lse
// errors 0.10 and 1.46; other orders 0.46-0.53. Softmax ignores that offset; log-probabilities
// are what sampling and perplexity read. For the same reason the per-logit bound applies after
// removing the offset since 2026-12-08: with the Q6_K group kernels the flash path's 704-token
// error was 3.04 with an offset of +1.08 — across legitimate float orders that prompt's offset
// measured -1.13 to +1.08 — while the offset-free error stayed near 2.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "decode/sequence.h"
#include "engine/model/model_fixture.h"

namespace fluoro {
namespace {

using nlohmann::json;

constexpr double kMaxLogProbErr = 3.9;

json load_fixture(const std::string& name) {
    std::ifstream in(test::fixtures_dir() / name);
    return json::parse(in);
}

void check_model(const std::filesystem::path& path, const std::string& fixture_name, double max_abs,
                 double max_centered_rms, AttentionImpl impl) {
    const json fx = load_fixture(fixture_name);
    test::LoadedTestModel* lm = test::shared_model(path);
    ASSERT_NE(lm, nullptr);
    Model& model = *lm->model;
    struct Restore {
        cpu::CpuBackend& be;
        AttentionImpl was;
        ~Restore() { be.set_attention_impl(was); }
    } restore{*lm->backend, lm->backend->attention_impl()};
    lm->backend->set_attention_impl(impl);
    ASSERT_EQ(int64_t(fx["n_vocab"]), model.n_vocab());
    const size_t stride = fx["stride"];
    auto kv = model.create_kv(1024, 1, KvType::F16);
    for (const json& e : fx["entries"]) {
        Sequence seq(model, *kv, 0);
        const std::vector<int32_t> ids = e["ids"];
        const auto logits = seq.prefill(ids);
        double max_err = 0, max_rel = 0, sum_diff = 0, sum_sq = 0;
        const auto& strided = e["strided"];
        for (size_t i = 0; i < strided.size(); ++i) {
            const double ref = strided[i];
            const double err = std::abs(double(logits[i * stride]) - ref);
            max_err = std::max(max_err, err);
            sum_diff += double(logits[i * stride]) - ref;
            sum_sq += err * err;
            max_rel = std::max(max_rel, err / std::max(1.0, std::abs(ref)));
        }
        const std::vector<int32_t> top_ids = e["top_ids"];
        const std::vector<double> top_logits = e["top_logits"];
        for (size_t i = 0; i < top_ids.size(); ++i)
            max_err =
                std::max(max_err, std::abs(double(logits[size_t(top_ids[i])]) - top_logits[i]));
        std::vector<int32_t> order(logits.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = int32_t(i);
        std::partial_sort(
            order.begin(), order.begin() + 10, order.end(),
            [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
        const std::set<int32_t> ours(order.begin(), order.begin() + 10);
        std::set<int32_t> ref(top_ids.begin(), top_ids.begin() + 10);
        for (size_t i = 10; i < top_ids.size(); ++i)  // the near ties of the 10th
            if (top_logits[i] >= top_logits[9] - 2 * max_centered_rms) ref.insert(top_ids[i]);
        size_t agree = 0;
        for (int32_t id : ours) agree += ref.count(id);
        const float mx = *std::max_element(logits.begin(), logits.end());
        double sum = 0;
        for (float l : logits) sum += std::exp(double(l) - mx);
        const double lse = std::log(sum) + mx, lse_ref = double(e["logsumexp"]);
        const double lse_err = std::abs(lse - lse_ref);
        double logprob_err = 0;
        for (size_t i = 0; i < top_ids.size() && i < 10; ++i)
            logprob_err = std::max(
                logprob_err,
                std::abs((double(logits[size_t(top_ids[i])]) - lse) - (top_logits[i] - lse_ref)));
        const double n_cmp = double(strided.size()), offset = sum_diff / n_cmp;
        const double centered_rms = std::sqrt(std::max(0.0, sum_sq / n_cmp - offset * offset));
        double centered_max = 0;  // every compared logit's error less the offset
        for (size_t i = 0; i < strided.size(); ++i)
            centered_max = std::max(
                centered_max, std::abs(double(logits[i * stride]) - double(strided[i]) - offset));
        for (size_t i = 0; i < top_ids.size(); ++i)
            centered_max = std::max(centered_max, std::abs(double(logits[size_t(top_ids[i])]) -
                                                           top_logits[i] - offset));
        std::printf(
            "[ logits ] %s %s/%s: %zu tokens, max abs err %.4f (%.4f less the offset), offset "
            "%.4f, centered rms %.4f, max rel err %.5f, lse err %.4f, top-10 log-prob err %.4f, "
            "top-10 agreement %zu/10, top-1 %d vs "
            "%d\n",
            std::string(attention_impl_name(impl)).c_str(), fixture_name.c_str(),
            std::string(e["name"]).c_str(), ids.size(), max_err, centered_max, offset, centered_rms,
            max_rel, lse_err, logprob_err, agree, order[0], top_ids[0]);
        EXPECT_LE(centered_max, max_abs) << e["name"];
        EXPECT_LE(centered_rms, max_centered_rms) << e["name"];
        EXPECT_LE(logprob_err, kMaxLogProbErr) << e["name"];
        EXPECT_EQ(order[0], top_ids[0]) << e["name"];
        EXPECT_GE(agree, 9u) << e["name"];
    }
}

class LogitsReference : public ::testing::TestWithParam<AttentionImpl> {};

TEST_P(LogitsReference, SmolLM2MatchesFloat64Reference) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    check_model(path, "logits_smollm2.json", 1.0, 0.25, GetParam());
}

TEST_P(LogitsReference, Gemma3MatchesFloat64Reference) {
    FLUORO_REQUIRE_MODEL(path, test::kGemma3File);
    // Gemma 3: 18 layers of 640 wide with a 262k-token tied head; the 704-token prompt (past the
    // 512-token sliding window) has the largest spread for llama.cpp too: max 2.28, centered RMS
    // 0.53 (llama-cpp-python 0.3.36, 2026-11-30). On that prompt the RMS moves with float
    // summation order alone: ours measured 0.39 (generic kernels), 0.51 (AVX2), 0.44 and 0.67
    // (AVX-512 before and after the 4-key attention reduction). Bounds: llama.cpp's + ~30%.
    check_model(path, "logits_gemma3.json", 3.0, 0.7, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Attention, LogitsReference,
                         ::testing::Values(AttentionImpl::Standard, AttentionImpl::Flash),
                         [](const auto& param) {
                             return std::string(attention_impl_name(param.param));
                         });

}  // namespace
}  // namespace fluoro
