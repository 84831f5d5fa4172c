#include "gguf/utf8.h"

#include <gtest/gtest.h>

namespace fluoro::gguf {
namespace {

TEST(GgufUtf8, AcceptsWellFormedText) {
    EXPECT_FALSE(find_invalid_utf8(""));
    EXPECT_FALSE(find_invalid_utf8("plain ascii"));
    EXPECT_FALSE(find_invalid_utf8("\xC4\xA0the"));              // Ġthe (GPT-2 byte map)
    EXPECT_FALSE(find_invalid_utf8("\xE2\x96\x81piece"));        // ▁piece (SentencePiece)
    EXPECT_FALSE(find_invalid_utf8("\xF0\x9F\x98\x80"));         // U+1F600
    EXPECT_FALSE(find_invalid_utf8("\xF4\x8F\xBF\xBF"));         // U+10FFFF
    EXPECT_FALSE(find_invalid_utf8(std::string_view("\0", 1)));  // NUL is a code point
}

TEST(GgufUtf8, ReportsTheFirstBadByte) {
    EXPECT_EQ(find_invalid_utf8("ab\xFF"), 2u);
    EXPECT_EQ(find_invalid_utf8("\x80"), 0u);              // lone continuation
    EXPECT_EQ(find_invalid_utf8("a\xC3"), 1u);             // truncated sequence
    EXPECT_EQ(find_invalid_utf8("\xC0\xAF"), 0u);          // overlong '/'
    EXPECT_EQ(find_invalid_utf8("\xE0\x80\xAF"), 0u);      // overlong
    EXPECT_EQ(find_invalid_utf8("\xED\xA0\x80"), 0u);      // surrogate U+D800
    EXPECT_EQ(find_invalid_utf8("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
    EXPECT_EQ(find_invalid_utf8("ok\xE2\x96"), 2u);        // truncated 3-byte
}

}  // namespace
}  // namespace fluoro::gguf
