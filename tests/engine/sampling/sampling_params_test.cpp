// SamplingParams::validate: defaults pass, each bad field is rejected with its name in the message.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "core/error.h"
#include "sampling/sampler.h"
#include "sampling/sampling_params.h"

namespace fluoro {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(SamplingParamsTest, DefaultsAreValidAndMatchLlamaCpp) {
    const SamplingParams p;
    EXPECT_NO_THROW(p.validate());
    EXPECT_FLOAT_EQ(p.temperature, 0.8f);
    EXPECT_EQ(p.top_k, 40);
    EXPECT_FLOAT_EQ(p.top_p, 0.95f);
    EXPECT_FLOAT_EQ(p.min_p, 0.05f);
    EXPECT_FLOAT_EQ(p.repeat_penalty, 1.0f);
    EXPECT_EQ(p.repeat_last_n, 64);
    EXPECT_EQ(p.n_probs, 5);
}

TEST(SamplingParamsTest, OffValuesAreValid) {
    SamplingParams p;
    p.temperature = 0.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.repeat_last_n = -1;
    p.frequency_penalty = -0.5f;  // negative penalties (encouragement) are allowed, as in OpenAI
    p.presence_penalty = -0.5f;
    p.n_probs = 0;
    EXPECT_NO_THROW(p.validate());
    p.n_probs = kMaxTopProbs;
    EXPECT_NO_THROW(p.validate());
}

struct BadCase {
    const char* field;
    std::function<void(SamplingParams&)> set;
};

TEST(SamplingParamsTest, EachBadFieldIsNamed) {
    const BadCase cases[] = {
        {"temperature", [](SamplingParams& p) { p.temperature = -0.1f; }},
        {"temperature", [](SamplingParams& p) { p.temperature = kNaN; }},
        {"temperature", [](SamplingParams& p) { p.temperature = kInf; }},
        {"top_k", [](SamplingParams& p) { p.top_k = -1; }},
        {"top_p", [](SamplingParams& p) { p.top_p = 0.0f; }},
        {"top_p", [](SamplingParams& p) { p.top_p = 1.01f; }},
        {"top_p", [](SamplingParams& p) { p.top_p = kNaN; }},
        {"min_p", [](SamplingParams& p) { p.min_p = -0.01f; }},
        {"min_p", [](SamplingParams& p) { p.min_p = 1.5f; }},
        {"min_p", [](SamplingParams& p) { p.min_p = kNaN; }},
        {"repeat_penalty", [](SamplingParams& p) { p.repeat_penalty = 0.0f; }},
        {"repeat_penalty", [](SamplingParams& p) { p.repeat_penalty = -1.0f; }},
        {"repeat_penalty", [](SamplingParams& p) { p.repeat_penalty = kInf; }},
        {"repeat_last_n", [](SamplingParams& p) { p.repeat_last_n = -2; }},
        {"frequency_penalty", [](SamplingParams& p) { p.frequency_penalty = kNaN; }},
        {"presence_penalty", [](SamplingParams& p) { p.presence_penalty = -kInf; }},
        {"n_probs", [](SamplingParams& p) { p.n_probs = -1; }},
        {"n_probs", [](SamplingParams& p) { p.n_probs = kMaxTopProbs + 1; }},
    };
    for (const BadCase& c : cases) {
        SamplingParams p;
        c.set(p);
        try {
            p.validate();
            ADD_FAILURE() << "no error for a bad " << c.field;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(c.field), std::string::npos) << e.what();
        }
        EXPECT_THROW(Sampler(p, 10), Error) << c.field;
    }
}

TEST(SamplingParamsTest, SamplerRejectsEmptyVocabulary) {
    EXPECT_THROW(Sampler(SamplingParams{}, 0), Error);
    EXPECT_THROW(Sampler(SamplingParams{}, -5), Error);
}

TEST(SamplingParamsTest, SetParamsValidates) {
    Sampler s(SamplingParams{}, 4);
    SamplingParams bad;
    bad.top_p = 2.0f;
    EXPECT_THROW(s.set_params(bad), Error);
    EXPECT_FLOAT_EQ(s.params().top_p, 0.95f);  // unchanged
}

}  // namespace
}  // namespace fluoro
