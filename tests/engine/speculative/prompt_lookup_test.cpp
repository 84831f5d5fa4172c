#include "speculative/prompt_lookup.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace fluoro::spec {
namespace {

using V = std::vector<int32_t>;

TEST(PromptLookup, ProposesWhatFollowedTheLongestMatchingSuffix) {
    // ... 1 2 3 [7 8 9] ... 5 2 3 [4] ... 1 2 3: the 3-gram "1 2 3" matched first.
    const V ctx{1, 2, 3, 7, 8, 9, 5, 2, 3, 4, 1, 2, 3};
    EXPECT_EQ(prompt_lookup_draft(ctx, {3, 1, 8}), (V{7, 8, 9, 5, 2, 3, 4, 1}));
    EXPECT_EQ(prompt_lookup_draft(ctx, {3, 1, 2}), (V{7, 8}));
    // With 2-grams at most, the most recent "2 3" (followed by 4) wins.
    EXPECT_EQ(prompt_lookup_draft(ctx, {2, 1, 3}), (V{4, 1, 2}));
}

TEST(PromptLookup, FallsBackToShorterSuffixesAndStopsAtTheEnd) {
    const V ctx{5, 6, 9, 6};  // "9 6" never seen before; "6" was, followed by 9 6
    EXPECT_EQ(prompt_lookup_draft(ctx, {3, 1, 8}), (V{9, 6}));
    EXPECT_TRUE(prompt_lookup_draft(ctx, {3, 2, 8}).empty());  // no 2-gram or 3-gram match
    EXPECT_TRUE(prompt_lookup_draft(V{}, {3, 1, 8}).empty());
    EXPECT_TRUE(prompt_lookup_draft(V{4}, {3, 1, 8}).empty());
    EXPECT_EQ(prompt_lookup_draft(V{4, 4}, {3, 1, 8}), (V{4}));  // overlapping repeat
}

TEST(PromptLookup, RejectsBadOptions) {
    const V ctx{1, 2, 1};
    EXPECT_THROW(prompt_lookup_draft(ctx, {3, 0, 8}), Error);
    EXPECT_THROW(prompt_lookup_draft(ctx, {1, 2, 8}), Error);
    EXPECT_THROW(prompt_lookup_draft(ctx, {3, 1, 0}), Error);
}

}  // namespace
}  // namespace fluoro::spec
