// copied_fraction (eval/spec_bench.h): how much of a bench output repeats its context,
// the measure `fluoro bench spec` reports beside each prompt's speedup.
#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"
#include "eval/spec_bench.h"

namespace fluoro::spec {
namespace {

TEST(CopiedFraction, CountsTokensEndingARunSeenBefore) {
    const std::vector<int32_t> prompt{1, 2, 3, 4, 5, 6};
    // The output's 4, 5, 6 end runs the prompt holds ([1 2 3 4] ...); its 1, 2, 3 end
    // [4 5 6 1], [5 6 1 2], [6 1 2 3], which it does not.
    const std::vector<int32_t> copy{1, 2, 3, 4, 5, 6};
    EXPECT_DOUBLE_EQ(copied_fraction(prompt, copy), 3.0 / 6.0);
    // Nothing of the prompt
    EXPECT_DOUBLE_EQ(copied_fraction(prompt, std::vector<int32_t>{9, 8, 7, 9, 8}), 0.0);
    // A run that repeats within the output counts from its second time
    const std::vector<int32_t> loop{7, 8, 9, 10, 7, 8, 9, 10};
    EXPECT_DOUBLE_EQ(copied_fraction(prompt, loop), 1.0 / 8.0);
    // Shorter runs
    EXPECT_DOUBLE_EQ(copied_fraction(prompt, std::vector<int32_t>{3, 9, 4}, 1), 2.0 / 3.0);
    EXPECT_DOUBLE_EQ(copied_fraction(prompt, std::vector<int32_t>{}), 0.0);
    EXPECT_THROW(copied_fraction(prompt, copy, 0), Error);
}

}  // namespace
}  // namespace fluoro::spec
