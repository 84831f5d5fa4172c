// Sampler::distribution: the distribution sample() draws from, which speculative verification
// compares between target and drafter. Checked against sample() itself: the same support and,
// by a χ² test over 20k draws, the same frequencies, for each transform chain.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "sampling/sampler.h"

namespace fluoro {
namespace {

std::vector<float> test_logits() {
    std::vector<float> v;
    for (int i = 0; i < 40; ++i) v.push_back(float(std::sin(i * 1.7) * 3.0 + (i % 7) * 0.4));
    return v;
}

struct Case {
    const char* name;
    float temperature;
    int32_t top_k;
    float top_p, min_p;
};

class SamplerDistribution : public testing::TestWithParam<Case> {};

TEST_P(SamplerDistribution, IsWhatSampleDrawsFrom) {
    const Case c = GetParam();
    SamplingParams sp;
    sp.temperature = c.temperature;
    sp.top_k = c.top_k;
    sp.top_p = c.top_p;
    sp.min_p = c.min_p;
    sp.seed = 77;
    const std::vector<float> logits = test_logits();
    Sampler s(sp, int32_t(logits.size()));
    TokenDist d;
    s.distribution(logits, {}, d);
    ASSERT_FALSE(d.ids.empty());
    double total = 0;
    for (double p : d.probs) {
        EXPECT_GT(p, 0.0);
        total += p;
    }
    EXPECT_NEAR(total, 1.0, 1e-9);

    constexpr int kDraws = 20000;
    std::map<int32_t, int64_t> counts;
    for (int i = 0; i < kDraws; ++i) ++counts[s.sample(logits, {}).id];
    const std::set<int32_t> support(d.ids.begin(), d.ids.end());
    double chi2 = 0;
    for (const auto& [id, n] : counts) EXPECT_TRUE(support.count(id)) << "drew " << id;
    for (size_t i = 0; i < d.ids.size(); ++i) {
        const double e = d.probs[i] * kDraws;
        const double o = double(counts[d.ids[i]]);
        chi2 += (o - e) * (o - e) / e;
    }
    // Generous bound: 99.99% quantile of χ² with up to 39 degrees of freedom is about 82.
    EXPECT_LT(chi2, 82.0) << c.name << ": support " << d.ids.size();
}

INSTANTIATE_TEST_SUITE_P(
    Chains, SamplerDistribution,
    testing::Values(Case{"plain", 1.0f, 0, 1.0f, 0.0f}, Case{"hot", 1.7f, 0, 1.0f, 0.0f},
                    Case{"top_k", 0.8f, 5, 1.0f, 0.0f}, Case{"top_p", 1.0f, 0, 0.7f, 0.0f},
                    Case{"top_p_cold", 0.6f, 0, 0.9f, 0.0f}, Case{"min_p", 1.2f, 0, 1.0f, 0.1f},
                    Case{"defaults", 0.8f, 40, 0.95f, 0.05f}),
    [](const testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

TEST(SamplerDistributionGreedy, IsAPointMassOnTheArgmax) {
    SamplingParams sp;
    sp.temperature = 0.0f;
    const std::vector<float> logits = test_logits();
    Sampler s(sp, int32_t(logits.size()));
    TokenDist d;
    s.distribution(logits, {}, d);
    ASSERT_EQ(d.ids.size(), 1u);
    EXPECT_EQ(d.ids[0], s.sample(logits, {}).id);
    EXPECT_EQ(d.probs[0], 1.0);
}

TEST(SamplerDistributionGreedy, DrawFromUsesTheStream) {
    SamplingParams sp;
    sp.seed = 3;
    Sampler a(sp, 4), b(sp, 4);
    const TokenDist d{{2, 0, 3}, {0.5, 0.25, 0.25}};
    for (int i = 0; i < 50; ++i) EXPECT_EQ(a.draw_from(d), b.draw_from(d));
    EXPECT_EQ(a.draw_from(TokenDist::point(1)), 1);
}

}  // namespace
}  // namespace fluoro
