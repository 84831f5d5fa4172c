// The prompt inspector's text: one line per token, special tokens in brackets, and a token's text
// escaped so the listing stays plain text (a byte-level BPE token can hold half a character).
#include <gtest/gtest.h>

#include "session/prompt_listing.h"

namespace fluoro::app {
namespace {

TEST(PromptListing, EscapesControlCharactersAndBrokenUtf8) {
    EXPECT_EQ(quoted_piece("a\nb\t\"c\"\\"), R"("a\nb\t\"c\"\\")");
    EXPECT_EQ(quoted_piece("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // whole characters stay
    EXPECT_EQ(quoted_piece("\xf0\x9f"), R"("\xf0\x9f")");       // the first half of an emoji
    EXPECT_EQ(quoted_piece(std::string("\x01\x7f", 2)), R"("\x01\x7f")");
}

TEST(PromptListing, OneLinePerTokenWithSpecialsMarked) {
    RunStarted r;
    r.prompt_ids = {1, 9690, 198};
    r.prompt_pieces = {"<|im_start|>", "system", "\n"};
    r.prompt_special = {1, 0, 0};
    EXPECT_EQ(prompt_listing(r),
              "prompt: 3 tokens (special tokens in [brackets])\n"
              "     0       1  [<|im_start|>]\n"
              "     1    9690  \"system\"\n"
              "     2     198  \"\\n\"\n");
}

TEST(PromptListing, SaysWhenSpecialsWereNotRecorded) {
    RunStarted r;  // a stored run: no special marks
    r.prompt_ids = {5};
    r.prompt_pieces = {"x"};
    EXPECT_EQ(prompt_listing(r),
              "prompt: 1 tokens (special tokens not recorded)\n"
              "     0       5  \"x\"\n");
}

}  // namespace
}  // namespace fluoro::app
