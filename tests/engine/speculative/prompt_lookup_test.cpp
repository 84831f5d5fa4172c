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
    EXPECT_EQ(prompt_lookup_draft(ctx, {3, 1, 8, 8}), (V{9, 6}));
    // one token matched: one token drafted by default
    EXPECT_EQ(prompt_lookup_draft(ctx, {3, 1, 8}), (V{9}));
    EXPECT_TRUE(prompt_lookup_draft(ctx, {3, 2, 8}).empty());  // no 2-gram or 3-gram match
    EXPECT_TRUE(prompt_lookup_draft(V{}, {3, 1, 8}).empty());
    EXPECT_TRUE(prompt_lookup_draft(V{4}, {3, 1, 8}).empty());
    EXPECT_EQ(prompt_lookup_draft(V{4, 4}, {3, 1, 8}), (V{4}));  // overlapping repeat
}

TEST(PromptLookup, DraftsOneTokenAfterAOneTokenMatchOnly) {
    // "3 4" matched (followed by 5 6 7 8); "4" alone, later, is followed by 9 9 9
    const V two{1, 3, 4, 5, 6, 7, 8, 3, 4};
    EXPECT_EQ(prompt_lookup_draft(two, {3, 1, 8}), (V{5, 6, 7, 8, 3, 4}));
    const V one{1, 4, 9, 9, 9, 2, 4};
    EXPECT_EQ(prompt_lookup_draft(one, {3, 1, 8}), (V{9}));
    EXPECT_EQ(prompt_lookup_draft(one, {3, 1, 8, 3}), (V{9, 9, 9}));
    EXPECT_EQ(prompt_lookup_draft(one, {3, 1, 2, 3}), (V{9, 9}));  // max_draft still bounds it
}

TEST(PromptLookup, RejectsBadOptions) {
    const V ctx{1, 2, 1};
    EXPECT_THROW(prompt_lookup_draft(ctx, {3, 0, 8}), Error);
    EXPECT_THROW(prompt_lookup_draft(ctx, {1, 2, 8}), Error);
    EXPECT_THROW(prompt_lookup_draft(ctx, {3, 1, 0}), Error);
    EXPECT_THROW(prompt_lookup_draft(ctx, {3, 1, 8, 0}), Error);
}

}  // namespace
}  // namespace fluoro::spec
