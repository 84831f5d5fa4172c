// head_pattern: each mass is the sum over the keys its definition names, and the label is the
// pattern holding at least half the mass (else local, diffuse or mixed), on rows built by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "telemetry/attention_patterns.h"

namespace fluoro {
namespace {

TEST(AttentionPatterns, MassesAndLabels) {
    // tokens: 5 9 7 5 | query at position 3 holds token 5, which occurred at 0 and was followed by
    // 9 at key 1: attending to key 1 is induction.
    const std::vector<int32_t> tokens{5, 9, 7, 5};
    const HeadPattern ind = head_pattern(std::vector<float>{0.1f, 0.7f, 0.1f, 0.1f}, tokens);
    EXPECT_FLOAT_EQ(ind.induction, 0.7f);
    EXPECT_FLOAT_EQ(ind.previous, 0.1f);
    EXPECT_FLOAT_EQ(ind.self, 0.1f);
    EXPECT_FLOAT_EQ(ind.sink, 1.0f);  // keys 0..3 are all sinks in a 4-token row
    EXPECT_EQ(ind.max_key, 1);
    // sink 1.0 >= induction 0.7: the sink wins unless a longer row separates them.
    EXPECT_EQ(ind.label, AttentionPattern::Sink);

    std::vector<int32_t> t(20, 1);
    t[10] = 42, t[11] = 43, t[19] = 42;  // token 42 at 10, followed by 43 at 11
    std::vector<float> w(20, 0.0f);
    w[11] = 0.6f, w[0] = 0.4f;
    EXPECT_EQ(head_pattern(w, t).label, AttentionPattern::Induction);
    EXPECT_FLOAT_EQ(head_pattern(w, t).induction, 0.6f);

    std::vector<float> prev(20, 0.0f);
    prev[18] = 0.9f, prev[0] = 0.1f;
    EXPECT_EQ(head_pattern(prev, t).label, AttentionPattern::Previous);
    std::vector<float> self(20, 0.0f);
    self[19] = 0.55f, self[3] = 0.45f;
    EXPECT_EQ(head_pattern(self, t).label, AttentionPattern::Self);
    std::vector<float> sink(20, 0.0f);
    sink[0] = 0.8f, sink[19] = 0.2f;
    EXPECT_EQ(head_pattern(sink, t).label, AttentionPattern::Sink);
    // Spread over the 8 most recent keys, none of them holding half.
    std::vector<float> local(20, 0.0f);
    for (int j = 12; j < 20; ++j) local[size_t(j)] = 0.1f;
    local[5] = 0.2f;
    EXPECT_FLOAT_EQ(head_pattern(local, t).local, 0.8f);
    EXPECT_EQ(head_pattern(local, t).label, AttentionPattern::Local);
    // Uniform: entropy log(20) > log(20) / 2.
    const HeadPattern uni = head_pattern(std::vector<float>(20, 0.05f), t);
    EXPECT_NEAR(uni.entropy, std::log(20.0), 1e-5);
    EXPECT_EQ(uni.label, AttentionPattern::Diffuse);
    // Two keys in the middle: low entropy, no named pattern.
    std::vector<float> two(20, 0.0f);
    two[6] = 0.5f, two[7] = 0.5f;
    EXPECT_EQ(head_pattern(two, t).label, AttentionPattern::Mixed);
    EXPECT_EQ(attention_pattern_name(AttentionPattern::Induction), "induction");
}

}  // namespace
}  // namespace fluoro
