// The KV policy quality harness (eval/kv_eval.h) on a small random model: under the full
// policy its token-by-token perplexity is exactly plain decoding's (and matches llama.cpp-style
// chunked perplexity), evicting policies evict and stay within their budget, the passkey prompt
// hides the needle where it says, and the grid records failures instead of stopping. On SmolLM2:
// a 512-token passkey with the full policy is retrieved at 50% depth, and is lost by a window
// that no longer holds the needle.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "decode/sequence.h"
#include "eval/kv_eval.h"
#include "eval/perplexity.h"
#include "gguf/test_model.h"
#include "model/model.h"
#include "test_models.h"
#include "test_temp.h"

namespace fluoro {
namespace {

struct TinyModel {
    std::unique_ptr<cpu::CpuBackend> backend = std::make_unique<cpu::CpuBackend>(2);
    std::unique_ptr<Model> model;
};

TinyModel tiny_model(uint32_t n_ctx = 2048) {
    gguf::TestModelSpec spec;
    spec.n_ctx = n_ctx;
    const auto path = test::unique_temp_path("kv_eval_tiny.gguf");
    gguf::write_test_model(path, spec);
    TinyModel m;
    m.model = Model::load(path, *m.backend, ModelLoadOptions{64, 64});
    return m;
}

// A synthetic "text": random token ids with some repeated phrases, so attention has structure.
std::vector<int32_t> synthetic_tokens(const Model& model, size_t n, uint64_t seed = 7) {
    std::mt19937_64 rng(seed);
    const std::vector<int32_t> phrase =
        model.tokenizer().encode(" the cat sat on the mat", false, false);
    std::vector<int32_t> t;
    while (t.size() < n) {
        if (rng() % 4 == 0)
            t.insert(t.end(), phrase.begin(), phrase.end());
        else
            t.push_back(int32_t(rng() % uint64_t(model.n_vocab())));
    }
    t.resize(n);
    return t;
}

double nll(std::span<const float> logits, int32_t target) {
    const float max = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float l : logits) sum += std::exp(double(l) - double(max));
    return std::log(sum) + double(max) - double(logits[size_t(target)]);
}

KvEvalSetup setup_of(KvPolicyKind kind, KvBudget budget, KvType type = KvType::F16) {
    KvEvalSetup s;
    s.policy.kind = kind;
    s.budget = budget;
    s.kv_type = type;
    return s;
}

KvBudget tokens_budget(int64_t n) {
    KvBudget b;
    b.tokens = n;
    return b;
}

TEST(KvEvalBudget, ParsesPercentagesAndTokenCounts) {
    const auto half = parse_kv_budget("50%");
    ASSERT_TRUE(half);
    EXPECT_EQ(half->resolve(1000), 500);
    EXPECT_EQ(half->label(), "50%");
    const auto frac = parse_kv_budget("12.5%");
    ASSERT_TRUE(frac);
    EXPECT_EQ(frac->resolve(1000), 125);
    const auto fixed = parse_kv_budget("256");
    ASSERT_TRUE(fixed);
    EXPECT_EQ(fixed->resolve(1000), 256);
    EXPECT_EQ(fixed->resolve(100), 100);  // never more than the length
    EXPECT_EQ(fixed->label(), "256");
    EXPECT_TRUE(parse_kv_budget("100%")->is_full());
    for (const char* bad : {"", "0%", "101%", "-5", "0", "abc", "10%%", "5x", "%"})
        EXPECT_FALSE(parse_kv_budget(bad)) << bad;
}

TEST(KvEvalPerplexity, FullPolicyEqualsPlainTokenByTokenDecoding) {
    TinyModel m = tiny_model();
    const std::vector<int32_t> tokens = synthetic_tokens(*m.model, 200);
    const KvPplResult r =
        kv_eval_perplexity(*m.model, tokens, setup_of(KvPolicyKind::Full, {}), 64);

    // Reference: a plain Sequence decoding the same tokens one at a time.
    auto kv = m.model->create_kv(256, 1, KvType::F16);
    Sequence seq(*m.model, *kv, 0);
    std::vector<double> ref;
    std::span<const float> logits = seq.prefill(std::span(tokens).first(1));
    for (size_t i = 1; i < tokens.size(); ++i) {
        ref.push_back(nll(logits, tokens[i]));
        if (i + 1 < tokens.size()) logits = seq.decode(tokens[i]);
    }
    ASSERT_EQ(r.nll.size(), ref.size());
    for (size_t i = 0; i < ref.size(); ++i) EXPECT_EQ(r.nll[i], float(ref[i])) << "token " << i;
    EXPECT_EQ(r.scored_tokens, 199);
    EXPECT_EQ(r.evictions.events, 0);
    EXPECT_EQ(r.evictions.evicted_tokens, 0);
    EXPECT_EQ(r.budget_tokens, 200);
    EXPECT_NEAR(r.ppl, std::exp(r.mean_nll), 1e-9 * r.ppl);
    // Buckets of 64 positions: predictions of tokens 1..63, 64..127, 128..191, 192..199.
    ASSERT_EQ(r.bucket_nll.size(), 4u);
    double b0 = 0;
    for (size_t i = 0; i < 63; ++i) b0 += ref[i];
    EXPECT_NEAR(r.bucket_nll[0], b0 / 63, 1e-5);
}

TEST(KvEvalPerplexity, FullPolicyMatchesChunkedPerplexityOnTheScoredHalf) {
    // eval/perplexity.cpp scores positions n/2 .. n-2 of one chunk, batched; the same
    // predictions decoded one token at a time agree to float rounding.
    TinyModel m = tiny_model();
    const std::vector<int32_t> tokens = synthetic_tokens(*m.model, 128, 11);
    const KvPplResult r = kv_eval_perplexity(*m.model, tokens, setup_of(KvPolicyKind::Full, {}));
    auto kv = m.model->create_kv(128, 1, KvType::F16);
    PerplexityOptions opt;
    opt.n_ctx = 128;
    const PerplexityResult chunked = perplexity(*m.model, *kv, tokens, opt);
    double sum = 0;
    for (size_t i = 64; i < 127; ++i) sum += r.nll[i];
    EXPECT_EQ(chunked.scored_tokens, 63);
    EXPECT_NEAR(sum / 63, chunked.mean_nll, 1e-4);
}

TEST(KvEvalPerplexity, WindowEvictsAndStaysWithinItsBudget) {
    TinyModel m = tiny_model();
    const std::vector<int32_t> tokens = synthetic_tokens(*m.model, 200);
    const KvPplResult full = kv_eval_perplexity(*m.model, tokens, setup_of(KvPolicyKind::Full, {}));
    const KvPplResult window =
        kv_eval_perplexity(*m.model, tokens, setup_of(KvPolicyKind::Window, tokens_budget(32)));
    EXPECT_EQ(window.budget_tokens, 32);
    EXPECT_GT(window.evictions.events, 0);
    EXPECT_GT(window.evictions.evicted_tokens, 150);
    EXPECT_LE(window.evictions.max_cached, 32);
    EXPECT_TRUE(std::isfinite(window.ppl));
    EXPECT_NE(window.mean_nll, full.mean_nll);
    // Until the window first fills, the two see the same tokens at the same positions.
    for (size_t i = 0; i < 30; ++i) EXPECT_EQ(window.nll[i], full.nll[i]) << "token " << i;
}

TEST(KvEvalPerplexity, EveryEvictingPolicyEvictsWithinItsBudget) {
    TinyModel m = tiny_model();
    const std::vector<int32_t> tokens = synthetic_tokens(*m.model, 160);
    for (const KvPolicyKind kind :
         {KvPolicyKind::Window, KvPolicyKind::Streaming, KvPolicyKind::H2O,
          KvPolicyKind::Scissorhands, KvPolicyKind::SnapKV}) {
        SCOPED_TRACE(std::string(kv_policy_name(kind)));
        const KvPplResult r =
            kv_eval_perplexity(*m.model, tokens, setup_of(kind, *parse_kv_budget("25%")));
        EXPECT_EQ(r.budget_tokens, 40);
        EXPECT_GT(r.evictions.evicted_tokens, 0);
        EXPECT_LE(r.evictions.max_cached, 40);
        EXPECT_TRUE(std::isfinite(r.ppl));
        EXPECT_EQ(r.nll.size(), 159u);
    }
}

TEST(KvEvalPasskey, PromptHidesTheNeedleAtItsDepth) {
    TinyModel m = tiny_model();
    const PasskeyPrompt shallow =
        make_passkey_prompt(*m.model, 1500, 0.0, 12345, PasskeyFormat::Plain);
    const PasskeyPrompt deep =
        make_passkey_prompt(*m.model, 1500, 1.0, 12345, PasskeyFormat::Plain);
    const PasskeyPrompt mid = make_passkey_prompt(*m.model, 1500, 0.5, 54321, PasskeyFormat::Plain);
    for (const PasskeyPrompt* p : {&shallow, &deep, &mid}) {
        EXPECT_LE(p->tokens.size(), 1500u);
        EXPECT_GT(p->tokens.size(), 1300u);
        ASSERT_GE(p->needle_begin, 0);
        EXPECT_GT(p->needle_end, p->needle_begin);
        EXPECT_GT(p->filler_before + p->filler_after, 5);
        const std::string needle = m.model->tokenizer().decode(
            std::span(p->tokens).subspan(size_t(p->needle_begin),
                                         size_t(p->needle_end - p->needle_begin)),
            false);
        EXPECT_NE(needle.find("The pass key is " + p->key), std::string::npos) << needle;
    }
    EXPECT_EQ(shallow.filler_before, 0);
    EXPECT_EQ(deep.filler_after, 0);
    EXPECT_LT(shallow.needle_begin, 300);
    EXPECT_GT(deep.needle_begin, 1100);
    EXPECT_NEAR(double(mid.filler_before), double(mid.filler_after), 1.0);
    const std::string tail = m.model->tokenizer().decode(std::span(mid.tokens).last(16), false);
    EXPECT_NE(tail.find("The pass key is"), std::string::npos) << tail;
    EXPECT_THROW(make_passkey_prompt(*m.model, 50, 0.5, 12345, PasskeyFormat::Plain), Error);
}

TEST(KvEvalPasskey, TrialReportsTheAnswerAndWhetherTheNeedleWasKept) {
    TinyModel m = tiny_model();
    const PasskeyPrompt p = make_passkey_prompt(*m.model, 600, 0.0, 24680, PasskeyFormat::Plain);
    const PasskeyTrial full = kv_eval_passkey(*m.model, p, setup_of(KvPolicyKind::Full, {}));
    EXPECT_EQ(full.prompt_tokens, int64_t(p.tokens.size()));
    EXPECT_EQ(full.key, "24680");
    EXPECT_GT(full.needle_tokens, 10);
    EXPECT_EQ(full.needle_kept, full.needle_tokens);
    EXPECT_EQ(full.evictions.evicted_tokens, 0);
    // Random weights: the answer is noise, but it was decoded (at most 8 tokens).
    EXPECT_EQ(full.correct,
              full.answer.find("24680") != std::string::npos &&
                  full.answer.find_first_of("0123456789") == full.answer.find("24680"));

    // A window of a quarter of the prompt cannot hold a needle at depth 0.
    const PasskeyTrial window =
        kv_eval_passkey(*m.model, p, setup_of(KvPolicyKind::Window, *parse_kv_budget("25%")));
    EXPECT_EQ(window.budget_tokens, int64_t(std::llround(double(p.tokens.size()) * 0.25)));
    EXPECT_GT(window.evictions.evicted_tokens, 0);
    EXPECT_EQ(window.needle_kept, 0);
    EXPECT_FALSE(window.correct);
    // StreamingLLM keeps the sinks and the question, not the needle after the instruction.
    const PasskeyTrial streaming =
        kv_eval_passkey(*m.model, p, setup_of(KvPolicyKind::Streaming, *parse_kv_budget("25%")));
    EXPECT_EQ(streaming.needle_kept, 0);
}

TEST(KvEvalSpeed, TimesDecodeStepsAfterTheContext) {
    TinyModel m = tiny_model();
    const std::vector<int32_t> text = synthetic_tokens(*m.model, 400);
    const KvSpeedResult full =
        kv_eval_speed(*m.model, text, 256, setup_of(KvPolicyKind::Full, {}), 16);
    EXPECT_EQ(full.context, 256);
    EXPECT_EQ(full.cached_tokens, 256);
    EXPECT_GT(full.tokens_per_s, 0);
    EXPECT_EQ(full.kv_bytes,
              256 * m.model->create_kv(1, 1, KvType::F16)->shape().bytes_per_token());
    const KvSpeedResult window =
        kv_eval_speed(*m.model, text, 256, setup_of(KvPolicyKind::Window, tokens_budget(64)), 16);
    EXPECT_LE(window.cached_tokens, 64);
    EXPECT_GT(window.evictions.evicted_tokens, 0);
    EXPECT_THROW(kv_eval_speed(*m.model, text, 1000, setup_of(KvPolicyKind::Full, {}), 16), Error);
}

TEST(KvEvalGrid, RunsFullOncePerTypeAndRecordsFailures) {
    TinyModel m = tiny_model();
    KvEvalPlan plan;
    plan.policies = {KvPolicyKind::Window, KvPolicyKind::Full, KvPolicyKind::Streaming};
    plan.budgets = {*parse_kv_budget("50%"), *parse_kv_budget("32")};
    plan.kv_types = {KvType::F16, KvType::F32};
    plan.tasks = {KvEvalTask::Ppl, KvEvalTask::Passkey};
    plan.ppl_tokens = 96;
    plan.ppl_bucket = 32;
    plan.passkey_lengths = {400, 20};  // 20 tokens cannot hold the frame: recorded, not thrown
    plan.passkey_depths = {0.5};
    plan.passkey_format = PasskeyFormat::Plain;
    const std::vector<int32_t> text = synthetic_tokens(*m.model, 300);
    std::vector<std::string> said;
    const auto cells =
        run_kv_eval(*m.model, text, plan, [&](const std::string& s) { said.push_back(s); });
    ASSERT_EQ(cells.size(), 2u * (1 + 2 * 2));
    EXPECT_EQ(cells[0].policy, KvPolicyKind::Full);
    EXPECT_EQ(cells[0].kv_type, KvType::F16);
    EXPECT_EQ(cells[1].policy, KvPolicyKind::Window);
    EXPECT_EQ(cells[1].budget.label(), "50%");
    EXPECT_EQ(cells[5].policy, KvPolicyKind::Full);
    EXPECT_EQ(cells[5].kv_type, KvType::F32);
    for (const KvEvalCell& c : cells) {
        ASSERT_TRUE(c.ppl) << (c.errors.empty() ? "" : c.errors[0]);
        EXPECT_EQ(c.ppl->scored_tokens, 95);
        EXPECT_EQ(c.ppl->bucket_nll.size(), 3u);
        ASSERT_EQ(c.passkey.size(), 1u);
        EXPECT_EQ(c.passkey[0].length, 400);
        ASSERT_EQ(c.errors.size(), 1u);
        EXPECT_NE(c.errors[0].find("passkey"), std::string::npos) << c.errors[0];
    }
    EXPECT_EQ(cells[2].ppl->budget_tokens, 32);  // window at 32 tokens of 96
    EXPECT_GT(cells[2].ppl->evictions.evicted_tokens, 0);
    // The same keys in every cell: cells differ only in their policy.
    EXPECT_EQ(cells[0].passkey[0].key, cells[3].passkey[0].key);
    EXPECT_FALSE(said.empty());
}

TEST(KvEvalSmolLM2, PasskeyAt512TokensIsFoundWithTheFullCacheAndLostByASmallWindow) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    cpu::CpuBackend be(2);
    auto model = Model::load(path, be);
    const PasskeyPrompt p = make_passkey_prompt(*model, 512, 0.5, 71432, PasskeyFormat::Chat);
    const PasskeyTrial full = kv_eval_passkey(*model, p, setup_of(KvPolicyKind::Full, {}));
    EXPECT_TRUE(full.correct) << "answer '" << full.answer << "'";
    EXPECT_EQ(full.needle_kept, full.needle_tokens);
    // A window of the last 20% holds the question but not the needle at the middle.
    const PasskeyTrial window =
        kv_eval_passkey(*model, p, setup_of(KvPolicyKind::Window, *parse_kv_budget("20%")));
    EXPECT_EQ(window.needle_kept, 0);
    EXPECT_FALSE(window.correct) << "answer '" << window.answer << "'";
}

}  // namespace
}  // namespace fluoro
