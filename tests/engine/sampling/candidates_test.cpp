// select_top and sort_until_mass(_bucketed) against a full sort, on logits with many ties and
// banned (-inf) tokens, through both select_top paths (heap for small k, partition for large k);
// and the whole-row kernels and the exp the sampler's softmax uses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "sampling/candidates.h"
#include "sampling/fast_exp.h"
#include "sampling/logit_kernels.h"

namespace fluoro::sampling {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> tied_logits(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<float> v(n);
    // Few distinct values, so ties are everywhere; some banned tokens.
    for (float& x : v) x = static_cast<float>(static_cast<int>(rng() % 13)) * 0.5f - 3.0f;
    for (size_t i = 0; i < n; i += 7) v[i] = -kInf;
    return v;
}

std::vector<Candidate> sorted_reference(const std::vector<float>& logits) {
    std::vector<Candidate> all;
    for (size_t i = 0; i < logits.size(); ++i)
        if (logits[i] > -kInf) all.push_back({static_cast<int32_t>(i), logits[i]});
    std::sort(all.begin(), all.end(), more_likely);
    return all;
}

TEST(SamplingCandidatesTest, SelectTopMatchesFullSort) {
    for (size_t n : {1u, 5u, 64u, 1000u, 5000u}) {
        const auto logits = tied_logits(n, static_cast<uint32_t>(n));
        const auto ref = sorted_reference(logits);
        std::vector<Candidate> out(n);
        for (size_t k : {size_t{1}, size_t{3}, size_t{40}, n / 8 + 1, n / 2, n, n + 10}) {
            const size_t got = select_top(logits, k, out);
            ASSERT_EQ(got, std::min(k, ref.size())) << "n=" << n << " k=" << k;
            for (size_t i = 0; i < got; ++i) {
                EXPECT_EQ(out[i].id, ref[i].id) << "n=" << n << " k=" << k << " i=" << i;
                EXPECT_EQ(out[i].logit, ref[i].logit);
            }
        }
    }
}

TEST(SamplingCandidatesTest, SelectTopZeroAndAllBanned) {
    std::vector<float> logits = {1.0f, 2.0f};
    std::vector<Candidate> out(2);
    EXPECT_EQ(select_top(logits, 0, out), 0u);
    logits = {-kInf, -kInf};
    EXPECT_EQ(select_top(logits, 1, out), 0u);
}

TEST(SamplingCandidatesTest, SortUntilMassStopsAtTheShortestPrefix) {
    const size_t n = 3000;
    const auto logits = tied_logits(n, 7);
    std::vector<float> weight(n);
    for (size_t i = 0; i < n; ++i) weight[i] = logits[i] > -kInf ? std::exp(logits[i]) : 0.0f;
    const auto ref = sorted_reference(logits);
    double total = 0.0;
    for (const Candidate& c : ref) total += weight[c.id];

    for (double fraction : {0.0001, 0.1, 0.5, 0.9, 0.999, 1.5}) {
        auto c = sorted_reference(logits);
        std::shuffle(c.begin(), c.end(), std::mt19937(3));
        const double target = fraction * total;
        const size_t got = sort_until_mass(c, weight, target);
        size_t expected = ref.size();
        double cum = 0.0;
        for (size_t i = 0; i < ref.size(); ++i) {
            cum += weight[ref[i].id];
            if (cum >= target) {
                expected = i + 1;
                break;
            }
        }
        ASSERT_EQ(got, expected) << fraction;
        for (size_t i = 0; i < got; ++i) EXPECT_EQ(c[i].id, ref[i].id) << fraction << " " << i;
    }
}

TEST(SamplingCandidatesTest, BucketedSortUntilMassMatchesTheGeneralOne) {
    // Logits spread over more than the histogram's 32-logit range, with ties and bucket edges.
    for (uint32_t seed : {1u, 2u, 3u}) {
        std::mt19937 rng(seed);
        const size_t n = 20000;
        std::vector<float> logits(n);
        for (float& x : logits) x = static_cast<float>(static_cast<int>(rng() % 4000)) / 64.0f;
        for (size_t i = 0; i < n; i += 11) logits[i] = -kInf;
        const float max_logit = *std::max_element(logits.begin(), logits.end());
        std::vector<float> weight(n);
        for (size_t i = 0; i < n; ++i) weight[i] = std::exp(logits[i] - max_logit);
        const auto ref = sorted_reference(logits);
        double total = 0.0;
        for (const Candidate& c : ref) total += weight[c.id];
        for (double fraction : {1e-9, 0.3, 0.95, 0.999999, 1.0, 2.0}) {
            auto a = sorted_reference(logits);
            std::shuffle(a.begin(), a.end(), std::mt19937(seed));
            auto b = a;
            const size_t want = sort_until_mass(a, weight, fraction * total);
            const size_t got = sort_until_mass_bucketed(b, weight, max_logit, fraction * total);
            ASSERT_EQ(got, want) << seed << " " << fraction;
            for (size_t i = 0; i < got; ++i) ASSERT_EQ(a[i].id, b[i].id) << fraction << " " << i;
        }
    }
}

TEST(SamplingLogitKernelsTest, FindMaxAndExpSum) {
    std::vector<float> v = {1.0f, -kInf, 3.5f, -2.0f, 3.5f, 0.0f, -0.0f};
    EXPECT_EQ(find_nan_or_pos_inf(v), v.size());
    EXPECT_EQ(max_value(v), 3.5f);
    EXPECT_EQ(max_value(std::vector<float>{-kInf, -kInf}), -kInf);
    EXPECT_EQ(max_value(std::vector<float>{-3.0f, -1.0f, -2.0f}), -1.0f);
    v[5] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_EQ(find_nan_or_pos_inf(v), 5u);
    v[2] = kInf;
    EXPECT_EQ(find_nan_or_pos_inf(v), 2u);

    std::mt19937 rng(4);
    std::normal_distribution<float> normal(0.0f, 4.0f);
    for (size_t n : {1u, 1023u, 1024u, 5000u}) {
        std::vector<float> x(n), out(n);
        for (float& e : x) e = normal(rng);
        const float m = max_value(x);
        double want = 0.0;
        for (float e : x) want += std::exp((static_cast<double>(e) - m) * 1.25);
        const double got = exp_shifted_sum(x, m, 1.25f, out);
        EXPECT_NEAR(got / want, 1.0, 5e-7) << n;
        for (size_t i = 0; i < n; ++i) {
            // exp of the float argument the kernel computes, to test exp's own error
            const double e = std::exp(static_cast<double>((x[i] - m) * 1.25f));
            ASSERT_NEAR(out[i], e, 3e-7 * e + 1e-37) << i;
        }
    }
}

TEST(SamplingFastExpTest, RelativeErrorAtFloatRounding) {
    double worst = 0.0;
    for (float x = -87.0f; x <= 0.0f; x += 0.000731f) {
        const double exact = std::exp(static_cast<double>(x));
        worst = std::max(worst, std::abs(fast_exp_nonpositive(x) - exact) / exact);
    }
    EXPECT_LT(worst, 2e-7);
    EXPECT_EQ(fast_exp_nonpositive(0.0f), 1.0f);
    EXPECT_EQ(fast_exp_nonpositive(-0.0f), 1.0f);
}

TEST(SamplingFastExpTest, VeryNegativeAndMinusInfinityAreTinyAndFinite) {
    for (float x : {-88.0f, -1000.0f, -1e30f, -kInf}) {
        const float y = fast_exp_nonpositive(x);
        EXPECT_GE(y, 0.0f) << x;
        EXPECT_LT(y, 1e-37f) << x;
    }
}

}  // namespace
}  // namespace fluoro::sampling
