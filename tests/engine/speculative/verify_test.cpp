// The verification rule: greedy agreement, and the exactness of speculative sampling — the tokens
// it emits must follow the target's distribution whatever the drafter proposes (χ² tests over
// 20k samples on a 6-token vocabulary, with position-dependent target and drafter).
#include "speculative/verify.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>

#include "core/error.h"

namespace fluoro::spec {
namespace {

constexpr int32_t kVocab = 6;

TokenDist dense(std::array<double, kVocab> w) {
    TokenDist d;
    double total = 0;
    for (double x : w) total += x;
    for (int32_t i = 0; i < kVocab; ++i)
        if (w[size_t(i)] > 0) {
            d.ids.push_back(i);
            d.probs.push_back(w[size_t(i)] / total);
        }
    return d;
}

// χ² statistic of observed counts against expected probabilities.
double chi2(const std::vector<int64_t>& observed, const std::vector<double>& expected, int64_t n) {
    double x = 0;
    for (size_t i = 0; i < observed.size(); ++i) {
        if (expected[i] == 0) {
            EXPECT_EQ(observed[i], 0) << "cell " << i << " has probability 0";
            continue;
        }
        const double e = expected[i] * double(n);
        x += (double(observed[i]) - e) * (double(observed[i]) - e) / e;
    }
    return x;
}

Sampler rng_sampler(uint64_t seed) {
    SamplingParams sp;
    sp.seed = seed;
    return Sampler(sp, kVocab);
}

TEST(VerifyGreedy, AcceptsTheAgreeingPrefixThenTakesTheTargetsPick) {
    const std::vector<int32_t> draft{4, 2, 5};
    Verdict v = verify_greedy(draft, std::vector<int32_t>{4, 2, 1, 3});
    EXPECT_EQ(v.accepted, 2);
    EXPECT_EQ(v.next, 1);
    EXPECT_EQ(v.kind, NextKind::Resampled);
    v = verify_greedy(draft, std::vector<int32_t>{4, 2, 5, 3});
    EXPECT_EQ(v.accepted, 3);
    EXPECT_EQ(v.next, 3);
    EXPECT_EQ(v.kind, NextKind::Bonus);
    v = verify_greedy(draft, std::vector<int32_t>{0, 2, 5, 3});
    EXPECT_EQ(v.accepted, 0);
    EXPECT_EQ(v.next, 0);
    v = verify_greedy({}, std::vector<int32_t>{7});
    EXPECT_EQ(v.accepted, 0);
    EXPECT_EQ(v.next, 7);
    EXPECT_EQ(v.kind, NextKind::Bonus);
    EXPECT_THROW(verify_greedy(draft, std::vector<int32_t>{4, 2, 5}), Error);
}

TEST(VerifySampled, RejectsMismatchedInputsAndImpossibleDrafts) {
    Sampler rng = rng_sampler(1);
    const TokenDist a = dense({1, 1, 0, 0, 0, 0});
    const std::vector<TokenDist> p{a, a};
    EXPECT_THROW(verify_sampled(std::vector<int32_t>{0}, {}, p, rng), Error);
    const std::vector<TokenDist> q{a};
    EXPECT_THROW(verify_sampled(std::vector<int32_t>{3}, q, p, rng), Error);  // q(3) = 0
}

TEST(VerifySampled, ResidualIsThePositivePartOfTheDifference) {
    const TokenDist p = dense({4, 3, 2, 1, 0, 0});
    const TokenDist q = dense({1, 3, 4, 2, 0, 0});
    const TokenDist r = residual(p, q);
    ASSERT_EQ(r.ids, std::vector<int32_t>{0});  // only token 0 has p > q
    EXPECT_DOUBLE_EQ(r.probs[0], 1.0);
    const TokenDist same = residual(p, p);  // no mass left: p itself
    EXPECT_EQ(same.ids, p.ids);
}

// Target and drafter for a two-token continuation, each conditioned on the first token.
struct Model2 {
    TokenDist first;
    std::array<TokenDist, kVocab> second;  // given the first token
    std::array<std::array<TokenDist, kVocab>, kVocab> third;
};

Model2 target_model() {
    Model2 m;
    m.first = dense({5, 1, 3, 0.5, 2, 1});
    for (int32_t a = 0; a < kVocab; ++a) {
        std::array<double, kVocab> w{};
        for (int32_t b = 0; b < kVocab; ++b) w[size_t(b)] = 1.0 + double((a * 7 + b * 3) % 5);
        m.second[size_t(a)] = dense(w);
        for (int32_t b = 0; b < kVocab; ++b)
            m.third[size_t(a)][size_t(b)] = dense({1, 1, 1, 1, 1, 1});
    }
    return m;
}

Model2 draft_model() {  // deliberately different, with a token the target never picks first
    Model2 m;
    m.first = dense({1, 4, 1, 3, 1, 0.2});
    for (int32_t a = 0; a < kVocab; ++a) {
        std::array<double, kVocab> w{};
        for (int32_t b = 0; b < kVocab; ++b) w[size_t(b)] = 1.0 + double((a + b * b) % 4);
        m.second[size_t(a)] = dense(w);
    }
    return m;
}

TEST(VerifySampled, EmittedTokensFollowTheTargetDistributionExactly) {
    const Model2 target = target_model(), drafter = draft_model();
    Sampler rng = rng_sampler(12345);
    std::mt19937_64 draft_rng(99);
    const auto draw = [&](const TokenDist& d) {
        const double u = double(draft_rng() >> 11) * 0x1.0p-53;
        double cum = 0;
        for (size_t i = 0; i < d.ids.size(); ++i)
            if ((cum += d.probs[i]) > u) return d.ids[i];
        return d.ids.back();
    };

    constexpr int64_t kSamples = 20000;
    std::vector<int64_t> first(kVocab, 0), joint(kVocab * kVocab, 0);
    int64_t accepted_total = 0;
    for (int64_t s = 0; s < kSamples; ++s) {
        // Draft two tokens, verify them in one step.
        const int32_t x1 = draw(drafter.first);
        const int32_t x2 = draw(drafter.second[size_t(x1)]);
        const std::vector<int32_t> d{x1, x2};
        const std::vector<TokenDist> q{drafter.first, drafter.second[size_t(x1)]};
        const std::vector<TokenDist> p{target.first, target.second[size_t(x1)],
                                       target.third[size_t(x1)][size_t(x2)]};
        const Verdict v = verify_sampled(d, q, p, rng);
        accepted_total += v.accepted;
        // The emitted sequence: accepted drafts, then v.next; a second token comes from the next
        // (plain) step when this one emitted only one.
        std::vector<int32_t> out(d.begin(), d.begin() + v.accepted);
        out.push_back(v.next);
        if (out.size() < 2) out.push_back(rng.draw_from(target.second[size_t(out[0])]));
        ++first[size_t(out[0])];
        ++joint[size_t(out[0] * kVocab + out[1])];
    }

    std::vector<double> p1(kVocab), p12(kVocab * kVocab);
    for (int32_t a = 0; a < kVocab; ++a) {
        p1[size_t(a)] = target.first.prob(a);
        for (int32_t b = 0; b < kVocab; ++b)
            p12[size_t(a * kVocab + b)] = p1[size_t(a)] * target.second[size_t(a)].prob(b);
    }
    // 99.9% quantiles of χ²: 5 degrees of freedom 20.52, 35 degrees of freedom 66.62.
    EXPECT_LT(chi2(first, p1, kSamples), 20.52);
    EXPECT_LT(chi2(joint, p12, kSamples), 66.62);
    // The test is not vacuous: the drafter was right often, but not always.
    EXPECT_GT(accepted_total, kSamples / 4);
    EXPECT_LT(accepted_total, 2 * kSamples * 9 / 10);
}

TEST(VerifySampled, ABiasedEmitterFailsTheSameTest) {
    // The χ² check above must be able to fail: emitting the draft unchecked gives q, not p.
    const Model2 drafter = draft_model(), target = target_model();
    std::mt19937_64 g(5);
    std::vector<int64_t> first(kVocab, 0);
    constexpr int64_t kSamples = 20000;
    for (int64_t s = 0; s < kSamples; ++s) {
        const double u = double(g() >> 11) * 0x1.0p-53;
        double cum = 0;
        int32_t pick = drafter.first.ids.back();
        for (size_t i = 0; i < drafter.first.ids.size(); ++i)
            if ((cum += drafter.first.probs[i]) > u) {
                pick = drafter.first.ids[i];
                break;
            }
        ++first[size_t(pick)];
    }
    std::vector<double> p1(kVocab);
    for (int32_t a = 0; a < kVocab; ++a) p1[size_t(a)] = target.first.prob(a);
    EXPECT_GT(chi2(first, p1, kSamples), 1000.0);
}

}  // namespace
}  // namespace fluoro::spec
