#include "tokenizer/utf8.h"

#include <gtest/gtest.h>

namespace fluoro::tok::utf8 {
namespace {

TEST(Utf8, FindsTheFirstIllFormedByte) {
    EXPECT_FALSE(find_invalid("plain ascii").has_value());
    EXPECT_FALSE(find_invalid("caf\xC3\xA9 \xF0\x9F\x98\x80 \xE2\x82\xAC").has_value());
    EXPECT_EQ(find_invalid("ab\x80"), 2u);            // lone continuation
    EXPECT_EQ(find_invalid("a\xC0\xAF"), 1u);         // overlong
    EXPECT_EQ(find_invalid("a\xE0\x80\xAF"), 1u);     // overlong 3-byte
    EXPECT_EQ(find_invalid("xy\xED\xA0\x80"), 2u);    // surrogate
    EXPECT_EQ(find_invalid("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
    EXPECT_EQ(find_invalid("abc\xE2\x82"), 3u);       // truncated
    EXPECT_EQ(find_invalid(std::string_view("a\0b\xFF", 4)), 3u);
}

TEST(Utf8, ClassifiesForStreaming) {
    size_t len = 0;
    EXPECT_EQ(classify("\xE2\x82", 0, len), SeqStatus::Incomplete);
    EXPECT_EQ(classify("\xE2\x82\xAC", 0, len), SeqStatus::Complete);
    EXPECT_EQ(len, 3u);
    EXPECT_EQ(classify("\xE2"
                       "a",
                       0, len),
              SeqStatus::Invalid);
    EXPECT_EQ(len, 1u);
    EXPECT_EQ(classify("\xF0\x9F\x98"
                       "a",
                       0, len),
              SeqStatus::Invalid);
    EXPECT_EQ(len, 3u);  // maximal subpart: one U+FFFD for the three bytes
}

TEST(Utf8, EncodesAndDecodesCodePoints) {
    for (char32_t cp : {U'a', U'\u00E9', U'\u20AC', U'\U0001F600', U'\u0120'}) {
        std::string s;
        append(s, cp);
        size_t i = 0;
        EXPECT_EQ(decode(s, i), cp);
        EXPECT_EQ(i, s.size());
        EXPECT_EQ(sequence_length(static_cast<unsigned char>(s[0])), s.size());
    }
}

}  // namespace
}  // namespace fluoro::tok::utf8
