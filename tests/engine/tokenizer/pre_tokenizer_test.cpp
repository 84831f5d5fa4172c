#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fluoro::tok {
namespace {

std::vector<std::string> split(PreTokenizer pre, std::string_view text) {
    const RegexSplitter splitter(pre_tokenizer_patterns(pre));
    std::vector<TextSpan> pieces, scratch;
    splitter.split(text, pieces, scratch);
    std::vector<std::string> out;
    size_t covered = 0;
    for (const TextSpan& p : pieces) {
        EXPECT_EQ(p.offset, covered);  // pieces tile the text in order
        covered = p.offset + p.length;
        out.emplace_back(text.substr(p.offset, p.length));
    }
    EXPECT_EQ(covered, text.size());
    return out;
}

using Pieces = std::vector<std::string>;

TEST(PreTokenizer, Gpt2) {
    EXPECT_EQ(split(PreTokenizer::Gpt2, "Hello world's   end 123!!\n"),
              (Pieces{"Hello", " world", "'s", "  ", " end", " 123", "!!", "\n"}));
}

TEST(PreTokenizer, SmollmIsolatesEveryDigitFirst) {
    EXPECT_EQ(split(PreTokenizer::Smollm, "ab 123 x4"),
              (Pieces{"ab", " ", "1", "2", "3", " x", "4"}));
}

TEST(PreTokenizer, Llama3GroupsDigitsByThreeAndIsCaseBlindOnContractions) {
    EXPECT_EQ(split(PreTokenizer::Llama3, "I'LL pay 12345"),
              (Pieces{"I", "'LL", " pay", " ", "123", "45"}));
}

TEST(PreTokenizer, Qwen2SplitsDigitsOneByOne) {
    EXPECT_EQ(split(PreTokenizer::Qwen2, "x 12"), (Pieces{"x", " ", "1", "2"}));
}

TEST(PreTokenizer, DefaultAppliesFourRegexesInTurn) {
    EXPECT_EQ(split(PreTokenizer::Default, "a+b 1234"), (Pieces{"a", "+", "b", " ", "123", "4"}));
}

TEST(PreTokenizer, WhiteSpaceIsUnicodesNotPcre2s) {
    // U+180E is not White_Space: it sticks to the space before it like punctuation does, as in
    // HuggingFace tokenizers. U+00A0 and U+3000 are White_Space (and only ' ' joins a word).
    EXPECT_EQ(split(PreTokenizer::Gpt2, "a \xE1\xA0\x8E"), (Pieces{"a", " \xE1\xA0\x8E"}));
    EXPECT_EQ(split(PreTokenizer::Gpt2,
                    "a\xC2\xA0\xE3\x80\x80"
                    "b"),
              (Pieces{"a", "\xC2\xA0", "\xE3\x80\x80", "b"}));
}

TEST(PreTokenizer, EmptyTextHasNoPieces) {
    EXPECT_TRUE(split(PreTokenizer::Smollm, "").empty());
}

}  // namespace
}  // namespace fluoro::tok
