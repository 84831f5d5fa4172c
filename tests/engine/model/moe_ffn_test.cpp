// The router's choice (route_token) on hand-made logits, and the expert block's refusals: what
// llama.cpp's build_moe_ffn does with softmax gating — top-k by probability, weights the
// probabilities, renormalised over the k when the family says so.
#include "model/moe_ffn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"

namespace fluoro {
namespace {

TEST(MoeRouting, ChoosesTheKMostProbableAndWeighsThemByTheirProbability) {
    const std::vector<float> logits{0.5f, 2.0f, -1.0f, 1.0f};
    double z = 0;
    for (const float l : logits) z += std::exp(double(l));
    std::vector<int32_t> ids(2);
    std::vector<float> w(2);
    route_token(logits, /*norm_weights=*/false, ids, w);
    EXPECT_EQ(ids, (std::vector<int32_t>{1, 3}));  // most probable first
    // Softmax over all four experts, not over the two chosen (OLMoE).
    EXPECT_NEAR(w[0], std::exp(2.0) / z, 1e-6);
    EXPECT_NEAR(w[1], std::exp(1.0) / z, 1e-6);
    route_token(logits, /*norm_weights=*/true, ids, w);
    EXPECT_EQ(ids, (std::vector<int32_t>{1, 3}));
    // Renormalised over the two (Mixtral, Qwen3-MoE): the softmax of the chosen logits.
    EXPECT_NEAR(w[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
    EXPECT_NEAR(w[0] + w[1], 1.0, 1e-6);
}

TEST(MoeRouting, EqualProbabilitiesGoToTheLowerExpert) {
    const std::vector<float> logits{1.0f, 3.0f, 3.0f, 3.0f};
    std::vector<int32_t> ids(2);
    std::vector<float> w(2);
    route_token(logits, true, ids, w);
    EXPECT_EQ(ids, (std::vector<int32_t>{1, 2}));
    EXPECT_FLOAT_EQ(w[0], 0.5f);
}

TEST(MoeRouting, AllExpertsWhenKIsTheirCount) {
    const std::vector<float> logits{0.0f, 0.0f};
    std::vector<int32_t> ids(2);
    std::vector<float> w(2);
    route_token(logits, false, ids, w);
    EXPECT_EQ(ids, (std::vector<int32_t>{0, 1}));
    EXPECT_FLOAT_EQ(w[0] + w[1], 1.0f);
}

TEST(MoeRouting, RefusesMoreChoicesThanExperts) {
    const std::vector<float> logits{0.0f, 1.0f};
    std::vector<int32_t> ids(3);
    std::vector<float> w(3);
    EXPECT_THROW(route_token(logits, true, ids, w), Error);
    EXPECT_THROW(MoeFfn(2, 64, 8, 9, 32, MoeOptions{}), Error);
    EXPECT_THROW(MoeFfn(2, 64, 8, 2, 0, MoeOptions{}), Error);
}

}  // namespace
}  // namespace fluoro
