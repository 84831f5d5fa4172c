// SentencePiece-style BPE on hand-built vocabularies: score order, ties, byte fallback, the space
// prefix, which piece types merges may produce, decode.
#include <gtest/gtest.h>

#include "engine/tokenizer/tiny_vocabs.h"
#include "tokenizer/tokenizer.h"

namespace fluoro::tok {
namespace {

using test::spm_data;
using Ids = std::vector<int32_t>;

const std::vector<std::pair<std::string, float>> kPieces = {
    {"a", -1},
    {"b", -2},
    {"c", -3},
    {"ab", -5},
    {"bc", -4},
    {"aa", -6},
    {"\xe2\x96\x81", -7},
    {"\xe2\x96\x81"
     "a",
     -8},
    {"\xe2\x96\x81"
     "ab",
     -9},
};

Tokenizer make(VocabData d) {
    return Tokenizer(Vocab::build(std::move(d)));
}

int32_t id(const Tokenizer& t, std::string_view text) {
    const int32_t i = t.vocab().find(text);
    EXPECT_NE(i, kNoToken) << text;
    return i;
}

TEST(TokenizerSpm, HighestScoreMergesFirst) {
    const Tokenizer t = make(spm_data(kPieces));
    // bc (-4) beats ab (-5): "abc" -> a|bc.
    EXPECT_EQ(t.encode("abc", false, false), (Ids{id(t, "a"), id(t, "bc")}));
}

TEST(TokenizerSpm, EqualScoresGoLeftmost) {
    const Tokenizer t = make(spm_data(kPieces));
    EXPECT_EQ(t.encode("aaa", false, false), (Ids{id(t, "aa"), id(t, "a")}));
}

TEST(TokenizerSpm, SpacesBecomeMarkersAndMerge) {
    const Tokenizer t = make(spm_data(kPieces));
    const Ids ids = t.encode("ab ab", false, false);
    EXPECT_EQ(ids, (Ids{id(t, "ab"), id(t,
                                        "\xe2\x96\x81"
                                        "ab")}));
    EXPECT_EQ(t.decode(ids, false), "ab ab");
}

TEST(TokenizerSpm, ByteFallbackForUnknownCharacters) {
    const Tokenizer t = make(spm_data(kPieces));
    // "ß" = C3 9F has no piece: one <0xNN> token per byte (ids 5 + byte).
    const Ids ids = t.encode("aß", false, false);
    EXPECT_EQ(ids, (Ids{id(t, "a"), 5 + 0xC3, 5 + 0x9F}));
    EXPECT_EQ(t.decode(ids, false), "aß");
    EXPECT_EQ(t.token_to_piece(5 + 0xC3, false), "\xC3");
}

TEST(TokenizerSpm, SpacePrefixWhenTheVocabularyAsksForIt) {
    VocabData d = spm_data(kPieces);
    d.add_space_prefix = true;
    const Tokenizer t = make(std::move(d));
    const Ids ids = t.encode("ab", false, false);
    EXPECT_EQ(ids, (Ids{id(t,
                           "\xe2\x96\x81"
                           "ab")}));
    EXPECT_EQ(t.decode(ids, false), "ab");  // the prefix is removed again
    // After a special token the prefix is added again. Decode, like SentencePiece's, drops it
    // only from the first text token (control tokens do not count).
    const Ids st = t.encode("<start_of_turn>ab", false, true);
    EXPECT_EQ(st, (Ids{3, id(t,
                             "\xe2\x96\x81"
                             "ab")}));
    EXPECT_EQ(t.decode(st, false), "ab");
    EXPECT_EQ(t.decode(st, true), "<start_of_turn>ab");
    EXPECT_EQ(t.decode(Ids{id(t, "a"), id(t,
                                          "\xe2\x96\x81"
                                          "ab")},
                       false),
              "a ab");
}

TEST(TokenizerSpm, BosFromTheVocabulary) {
    VocabData d = spm_data(kPieces);
    d.add_bos = true;
    const Tokenizer t = make(std::move(d));
    EXPECT_EQ(t.encode("a", true, false), (Ids{1, id(t, "a")}));
    EXPECT_EQ(t.decode(Ids{1, id(t, "a")}, false), "a");
    EXPECT_EQ(t.decode(Ids{1, id(t, "a")}, true), "<s>a");
}

TEST(TokenizerSpm, ControlTokensOnlyWhenParsed) {
    const Tokenizer t = make(spm_data(kPieces));
    EXPECT_EQ(t.encode("a<start_of_turn>b", false, true), (Ids{id(t, "a"), 3, id(t, "b")}));
    const Ids text = t.encode("a<start_of_turn>b", false, false);
    EXPECT_GT(text.size(), 3u);
    EXPECT_EQ(t.decode(text, false), "a<start_of_turn>b");
}

TEST(TokenizerSpm, MergesNeverProduceControlOrByteTokens) {
    // "<s>" is CONTROL and "<0x41>" is BYTE: with pieces for every prefix, merging could spell
    // them, but SentencePiece only merges into NORMAL/USER_DEFINED/UNUSED pieces.
    const Tokenizer t = make(spm_data({{"<", -1},
                                       {"s", -1},
                                       {">", -1},
                                       {"<s", -1},
                                       {"0", -1},
                                       {"x", -1},
                                       {"4", -1},
                                       {"1", -1},
                                       {"<0", -1},
                                       {"<0x", -1},
                                       {"<0x4", -1},
                                       {"<0x41", -1}}));
    EXPECT_EQ(t.encode("<s>", false, false), (Ids{id(t, "<s"), id(t, ">")}));
    EXPECT_EQ(t.encode("<0x41>", false, false), (Ids{id(t, "<0x41"), id(t, ">")}));
}

TEST(TokenizerSpm, UnusedPiecesAreSplitBack) {
    VocabData d = spm_data({{"a", -1}, {"b", -1}, {"ab", 0}});
    d.types.back() = TokenType::Unused;
    const Tokenizer t = make(std::move(d));
    EXPECT_EQ(t.encode("ab", false, false), (Ids{id(t, "a"), id(t, "b")}));
}

TEST(TokenizerSpm, UserDefinedMatchesBeforeMerging) {
    const Tokenizer t = make(spm_data(kPieces));
    EXPECT_EQ(t.encode("a\nb", false, false), (Ids{id(t, "a"), 4, id(t, "b")}));
    EXPECT_EQ(t.decode(Ids{4}, false), "\n");
}

TEST(TokenizerSpm, EmptyText) {
    const Tokenizer t = make(spm_data(kPieces));
    EXPECT_TRUE(t.encode("", false, true).empty());
    EXPECT_EQ(t.decode(Ids{}, true), "");
}

}  // namespace
}  // namespace fluoro::tok
