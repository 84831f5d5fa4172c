// ExpertLoad folds the steps' expert routing into per-layer counts and prints them; routing of
// another shape, or arrays that do not match their shape, is refused naming both.
#include "session/expert_load.h"

#include <gtest/gtest.h>

#include <memory>

#include "core/error.h"

namespace fluoro::app {
namespace {

// 2 layers, 4 experts, top-2; tokens given as {layer 0 choices..., layer 1 choices...}.
std::shared_ptr<ExpertRouting> routing(int64_t n_tokens, std::vector<int32_t> experts) {
    auto r = std::make_shared<ExpertRouting>();
    r->n_layer = 2;
    r->n_expert = 4;
    r->n_used = 2;
    r->n_tokens = n_tokens;
    r->experts = std::move(experts);
    r->weights.assign(r->experts.size(), 0.5f);
    return r;
}

TEST(ExpertLoad, CountsEachExpertsChoicesPerLayerOverSteps) {
    ExpertLoad load;
    StepEvent prefill;
    prefill.experts = routing(2, {0, 1, 0, 2, /*layer 1*/ 3, 2, 3, 1});
    load.add(Event{prefill});
    load.add(Event{StepEvent{}});                           // a step without routing adds nothing
    load.add(routing(1, {0, 3, /*layer 1*/ 3, -1}).get());  // -1: a layer a pass did not run
    EXPECT_EQ(load.tokens(), 3);
    EXPECT_EQ(load.count(0, 0), 3);
    EXPECT_EQ(load.count(0, 1), 1);
    EXPECT_EQ(load.count(0, 2), 1);
    EXPECT_EQ(load.count(0, 3), 1);
    EXPECT_EQ(load.count(1, 3), 3);
    EXPECT_EQ(load.count(1, 0), 0);
    const std::string text = load.format();
    // Layer 0: 6 choices, an even load is 1.5, expert 0 took 3: 2x, half the choices. Layer 1:
    // 5 choices (one pass skipped it), expert 3 took 3: 2.4x an even 1.25.
    EXPECT_NE(text.find("layer   0:  2.00x  e0 50% e1 17% e2 17% e3 17%"), std::string::npos)
        << text;
    EXPECT_NE(text.find("layer   1:  2.40x  e3 60%"), std::string::npos) << text;
    EXPECT_NE(load.format(1).find("e0 50% ..."), std::string::npos);
}

TEST(ExpertLoad, RefusesRoutingOfAnotherShape) {
    ExpertLoad load;
    load.add(routing(1, {0, 1, 2, 3}).get());
    auto other = routing(1, {0, 1, 2, 3});
    other->n_expert = 8;
    EXPECT_THROW(load.add(other.get()), Error);
    EXPECT_THROW(load.add(routing(2, {0, 1}).get()), Error);        // too few choices
    EXPECT_THROW(load.add(routing(1, {0, 1, 2, 4}).get()), Error);  // no expert 4
    EXPECT_EQ(ExpertLoad().format(), "experts: no routing recorded\n");
}

}  // namespace
}  // namespace fluoro::app
