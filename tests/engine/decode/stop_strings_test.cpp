// Stop strings: where a match is found (only matches ending in the new bytes, the earliest of
// several, one spanning earlier text) and how much of a streamed reply may be released (never
// the start of a stop string that the next token could complete).
#include "decode/stop_strings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fluoro {
namespace {

TEST(StopStrings, FindsTheEarliestMatchEndingInTheNewBytes) {
    const std::vector<std::string> stops{"END", "\n\n"};
    EXPECT_EQ(find_stop_string("abc", 0, stops), std::nullopt);
    EXPECT_EQ(find_stop_string("abEND", 0, stops), 2u);
    // "EN" came earlier, "D" is new: the match spans both.
    EXPECT_EQ(find_stop_string("abEND", 4, stops), 2u);
    // A match wholly before `from` was seen already (a caller never passes one; not re-found).
    EXPECT_EQ(find_stop_string("END and more", 10, stops), std::nullopt);
    // Both present: the earlier position wins, whichever stop it is.
    EXPECT_EQ(find_stop_string("x\n\ny END", 0, stops), 1u);
    EXPECT_EQ(find_stop_string("xEND\n\n", 0, stops), 1u);
    const std::vector<std::string> none;
    EXPECT_EQ(find_stop_string("END", 0, none), std::nullopt);
    const std::vector<std::string> empty{""};
    EXPECT_EQ(find_stop_string("END", 0, empty), std::nullopt);
}

TEST(StopStrings, HoldsBackWhatMayBeginAStopString) {
    const std::vector<std::string> stops{"END", "</s>"};
    EXPECT_EQ(releasable("hello", stops), 5u);
    EXPECT_EQ(releasable("hello E", stops), 6u);    // "E" may become END
    EXPECT_EQ(releasable("hello EN", stops), 6u);   // so may "EN"
    EXPECT_EQ(releasable("hello ENX", stops), 9u);  // not any more
    EXPECT_EQ(releasable("hello END tail", stops), 6u);
    EXPECT_EQ(releasable("a </", stops), 2u);
    EXPECT_EQ(releasable("a </s", stops), 2u);
    EXPECT_EQ(releasable("", stops), 0u);
    const std::vector<std::string> none;
    EXPECT_EQ(releasable("hello E", none), 7u);
    // The longest held-back tail of all the stops decides.
    const std::vector<std::string> two{"ab", "bcd"};
    EXPECT_EQ(releasable("xxabc", two), 2u);  // "ab" whole at 2
    EXPECT_EQ(releasable("xxbc", two), 2u);   // "bc" may become "bcd"
    EXPECT_EQ(releasable("xxa", two), 2u);
}

}  // namespace
}  // namespace fluoro
