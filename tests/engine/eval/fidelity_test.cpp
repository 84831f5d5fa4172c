// The fidelity measurement's pieces (eval/fidelity.h): the KL divergence and its summary against
// values worked by hand, the reference's LM head against the file's own rows, and a reference
// that does not fit the model refused. The whole measurement on both default models, against
// the float64 reference and beside llama.cpp, is tests/tools/fidelity_test.py.
#include "eval/fidelity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "engine/model/model_fixture.h"
#include "kv/kv_cache.h"
#include "tensor/dequantize.h"
#include "tensor/ggml_type.h"

namespace fluoro {
namespace {

TEST(Fidelity, KlDivergenceOfTwoTokensWorkedByHand) {
    // p = softmax(0, 0) = (1/2, 1/2); q = softmax(ln 3, 0) = (3/4, 1/4):
    // KL = 1/2 ln(2/3) + 1/2 ln 2 = 1/2 ln(4/3).
    const std::vector<double> ref{0.0, 0.0};
    const std::vector<float> test{float(std::log(3.0)), 0.0f};
    // ln 3 rounded to float moves q by ~1e-8: the KL by less than 1e-7.
    EXPECT_NEAR(kl_divergence(ref, test), 0.5 * std::log(4.0 / 3.0), 1e-7);
    // Adding a constant to every logit leaves the distribution: KL unchanged.
    const std::vector<double> shifted{5.0, 5.0};
    EXPECT_NEAR(kl_divergence(shifted, test), 0.5 * std::log(4.0 / 3.0), 1e-7);
    // Not symmetric: KL(q || p) = 3/4 ln(3/2) + 1/4 ln(1/2).
    const std::vector<double> q{std::log(3.0), 0.0};
    const std::vector<float> p{0.0f, 0.0f};
    EXPECT_NEAR(kl_divergence(q, p), 0.75 * std::log(1.5) + 0.25 * std::log(0.5), 1e-12);
}

TEST(Fidelity, KlDivergenceOfEqualDistributionsIsZeroAndSizesMustMatch) {
    const std::vector<double> ref{1.5, -2.0, 0.25, 7.0};
    const std::vector<float> test{1.5f, -2.0f, 0.25f, 7.0f};
    EXPECT_EQ(kl_divergence(ref, test), 0.0);
    EXPECT_THROW(kl_divergence(ref, std::span<const float>(test).first(3)), Error);
    EXPECT_THROW(kl_divergence({}, {}), Error);
}

TEST(Fidelity, SummaryTakesTheSortedPercentileAndTheTopTokenShare) {
    std::vector<double> kld;
    for (int i = 200; i >= 1; --i) kld.push_back(double(i));  // 1..200, unsorted
    std::vector<bool> same(200, true);
    same[3] = same[7] = false;
    const FidelityStats s = summarize_fidelity(kld, same, 200 * std::log(4.0), 200 * std::log(2.0));
    EXPECT_EQ(s.tokens, 200);
    EXPECT_DOUBLE_EQ(s.kld_mean, 100.5);
    EXPECT_EQ(s.kld_p99, 198.0);  // sorted[floor(0.99 * 199)] = sorted[197] = 198
    EXPECT_EQ(s.kld_max, 200.0);
    EXPECT_EQ(s.kld, kld);  // per position, in the order measured
    EXPECT_DOUBLE_EQ(s.top1, 198.0 / 200.0);
    EXPECT_NEAR(s.ppl, 4.0, 1e-12);
    EXPECT_NEAR(s.ppl_reference, 2.0, 1e-12);
}

// A unit vector e_i as the hidden state picks column i of the LM head: logits[v] = W[v][i],
// then the file's soft cap c tanh(x / c) (Gemma 2: 30 when the file gives none; the fixture
// gives 12).
void expect_head_column(const char* file, int64_t column, bool capped) {
    const std::filesystem::path path = test::fixtures_dir() / file;
    test::LoadedTestModel* lm = test::shared_model(path, 16, 16);
    ASSERT_NE(lm, nullptr) << path;
    const Model& model = *lm->model;
    const int64_t n_embd = int64_t(model.hparams().n_embd), n_vocab = model.n_vocab();
    std::vector<double> hidden(size_t(2 * n_embd), 0.0);
    hidden[size_t(column)] = 1.0;
    hidden[size_t(n_embd + column)] = 40.0;  // large enough for the cap to bend it
    std::vector<double> logits;
    reference_logits(model, hidden, 2, logits);
    ASSERT_EQ(logits.size(), size_t(2 * n_vocab));
    const gguf::TensorInfo* w = model.file().find_tensor("output.weight");
    if (!w) w = model.file().find_tensor("token_embd.weight");
    const auto bytes = model.file().tensor_data(*w);
    const size_t stride = size_t(*row_bytes(w->type, uint64_t(n_embd)));
    std::vector<float> row(static_cast<size_t>(n_embd));
    const double cap = model.hparams().final_logit_softcap.value_or(30.0);
    for (int64_t v = 0; v < n_vocab; v += 7) {
        dequantize_row(w->type, bytes.data() + size_t(v) * stride, row.data(), n_embd);
        const double x = row[size_t(column)];
        const double want1 = capped ? cap * std::tanh(x / cap) : x;
        const double want40 = capped ? cap * std::tanh(40.0 * x / cap) : 40.0 * x;
        EXPECT_NEAR(logits[size_t(v)], want1, 1e-12) << file << " token " << v;
        EXPECT_NEAR(logits[size_t(n_vocab + v)], want40, 1e-11) << file << " token " << v;
    }
}

TEST(Fidelity, ReferenceLogitsAreTheFilesLmHeadInDouble) {
    expect_head_column("arch_llama3.gguf", 3, false);
    expect_head_column("arch_gemma2.gguf", 5, true);
}

TEST(Fidelity, AReferenceForAnotherModelIsRefusedNamingWhatDiffers) {
    const std::filesystem::path path = test::fixtures_dir() / "arch_llama3.gguf";
    test::LoadedTestModel* lm = test::shared_model(path, 16, 16);
    ASSERT_NE(lm, nullptr);
    Model& model = *lm->model;
    const int64_t n_embd = int64_t(model.hparams().n_embd);
    auto kv = model.create_kv(16, 1, KvType::F32);
    FidelityReference ref;
    ref.n_ctx = 8;
    ref.first_scored = 4;
    ref.n_embd = n_embd;
    ref.windows = {{1, 2, 3, 4, 5, 6, 7, 8}};
    ref.hidden.assign(size_t(3 * n_embd), 0.01);
    std::vector<double> logits;
    reference_logits(model, std::span<const double>(ref.hidden).first(size_t(n_embd)), 1, logits);
    ref.check_ids = {0, 1};
    ref.check_logits = {logits[0], logits[1]};
    double max = logits[0], sum = 0.0;
    for (double l : logits) max = std::max(max, l);
    for (double l : logits) sum += std::exp(l - max);
    ref.check_logsumexp = max + std::log(sum);
    EXPECT_NO_THROW(fidelity(model, *kv, ref));  // the check as made passes

    auto refused = [&](FidelityReference r, const char* needle) {
        try {
            fidelity(model, *kv, r);
            ADD_FAILURE() << "accepted; expected an error naming " << needle;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    FidelityReference r = ref;
    r.check_logits[1] += 1e-3;  // a head that differs in the third decimal
    refused(r, "logit of token 1");
    r = ref;
    r.check_logsumexp += 1e-3;
    refused(r, "log-sum-exp");
    r = ref;
    r.n_embd += 1;
    refused(r, "another model");
    r = ref;
    r.windows[0][2] = int32_t(model.n_vocab());
    refused(r, "outside the model's vocabulary");
    r = ref;
    r.hidden.pop_back();
    refused(r, "values, not 1 windows");
    r = ref;
    r.n_ctx = 32;
    r.windows = {std::vector<int32_t>(32, 1)};
    r.hidden.assign(size_t(27 * n_embd), 0.01);
    refused(r, "KV cache holds 16");
}

}  // namespace
}  // namespace fluoro
