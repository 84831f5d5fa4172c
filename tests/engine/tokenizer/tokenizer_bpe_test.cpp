// Byte-level BPE on hand-built vocabularies: merge order, ties, pre-tokenizer families, special
// tokens, dropped characters, decode.
#include <gtest/gtest.h>

#include "core/error.h"
#include "engine/tokenizer/tiny_vocabs.h"
#include "tokenizer/tokenizer.h"

namespace fluoro::tok {
namespace {

using test::bl;
using test::bpe_data;
using Ids = std::vector<int32_t>;

Tokenizer make(const std::vector<std::string>& extra,
               const std::vector<std::pair<std::string, std::string>>& merges,
               std::string pre = "gpt-2") {
    return Tokenizer(Vocab::build(bpe_data(extra, merges, std::move(pre))));
}

int32_t id(const Tokenizer& t, std::string_view raw) {
    const int32_t i = t.vocab().find(bl(raw));
    EXPECT_NE(i, kNoToken) << raw;
    return i;
}

TEST(TokenizerBpe, LowestRankMergesFirst) {
    // "b c" outranks "a b": "abc" -> a|bc, not ab|c.
    const Tokenizer t = make({"ab", "bc"}, {{"b", "c"}, {"a", "b"}});
    EXPECT_EQ(t.encode("abc", false, false), (Ids{id(t, "a"), id(t, "bc")}));
    const Tokenizer u = make({"ab", "bc"}, {{"a", "b"}, {"b", "c"}});
    EXPECT_EQ(u.encode("abc", false, false), (Ids{id(u, "ab"), id(u, "c")}));
}

TEST(TokenizerBpe, EqualRankTiesGoLeftmost) {
    const Tokenizer t = make({"aa", "aaaa"}, {{"a", "a"}, {"aa", "aa"}});
    EXPECT_EQ(t.encode("aaa", false, false), (Ids{id(t, "aa"), id(t, "a")}));
    EXPECT_EQ(t.encode("aaaaa", false, false), (Ids{id(t, "aaaa"), id(t, "a")}));
}

TEST(TokenizerBpe, MergesBuildOnEachOther) {
    const Tokenizer t =
        make({"he", "ll", "hell", "hello", " w", " wo"},
             {{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {" ", "w"}, {" w", "o"}});
    EXPECT_EQ(t.encode("hello world", false, false),
              (Ids{id(t, "hello"), id(t, " wo"), id(t, "r"), id(t, "l"), id(t, "d")}));
}

TEST(TokenizerBpe, PreTokenizerKeepsWordsApart) {
    // "o" + " " would merge if the regex did not cut "o" | " t".
    const Tokenizer t = make({"o "}, {{"o", " "}});
    EXPECT_EQ(t.encode("o t", false, false), (Ids{id(t, "o"), id(t, " "), id(t, "t")}));
    // Whitespace before a word: all but the last space stay apart from it.
    const Tokenizer u = make({"  ", " x"}, {{" ", " "}, {" ", "x"}});
    EXPECT_EQ(u.encode("   x", false, false), (Ids{id(u, "  "), id(u, " x")}));
}

TEST(TokenizerBpe, SmollmSplitsDigitsOneByOne) {
    const std::vector<std::pair<std::string, std::string>> merges = {{" ", "1"}, {"1", "2"}};
    const Tokenizer gpt2 = make({"12", " 1"}, merges, "gpt-2");
    EXPECT_EQ(gpt2.encode("x 123", false, false),
              (Ids{id(gpt2, "x"), id(gpt2, " 1"), id(gpt2, "2"), id(gpt2, "3")}));
    const Tokenizer smollm = make({"12", " 1"}, merges, "smollm");
    EXPECT_EQ(
        smollm.encode("x 123", false, false),
        (Ids{id(smollm, "x"), id(smollm, " "), id(smollm, "1"), id(smollm, "2"), id(smollm, "3")}));
}

TEST(TokenizerBpe, Llama3IgnoresMergesForWholeWords) {
    // "abc" is a token no merge sequence reaches; llama3 emits it whole, gpt-2 does not.
    const Tokenizer llama3 = make({"abc"}, {}, "llama3");
    EXPECT_EQ(llama3.encode("abc", false, false), (Ids{id(llama3, "abc")}));
    const Tokenizer gpt2 = make({"abc"}, {}, "gpt-2");
    EXPECT_EQ(gpt2.encode("abc", false, false).size(), 3u);
}

TEST(TokenizerBpe, QwenAndDefaultFamiliesSplitNumbers) {
    const Tokenizer qwen = make({}, {}, "qwen2");
    EXPECT_EQ(qwen.encode("12", false, false), (Ids{id(qwen, "1"), id(qwen, "2")}));
    const Tokenizer dflt = make({"12"}, {{"1", "2"}}, "default");
    EXPECT_EQ(dflt.encode("12", false, false), (Ids{id(dflt, "12")}));
}

TEST(TokenizerBpe, SpecialTokensOnlyWhenParsed) {
    const Tokenizer t = make({}, {});
    const Ids special = t.encode("a<|im_start|>b", false, true);
    EXPECT_EQ(special, (Ids{id(t, "a"), 1, id(t, "b")}));
    const Ids text = t.encode("a<|im_start|>b", false, false);
    EXPECT_EQ(text.size(), 14u);  // a < | i m _ s t a r t | > b
    EXPECT_EQ(t.decode(text, false), "a<|im_start|>b");
    EXPECT_EQ(t.decode(special, true), "a<|im_start|>b");
    EXPECT_EQ(t.decode(special, false), "ab");
}

TEST(TokenizerBpe, UserDefinedTokensAlwaysSplit) {
    const Tokenizer t = make({}, {});
    EXPECT_EQ(t.encode("x<tool>y", false, false), (Ids{id(t, "x"), 3, id(t, "y")}));
    EXPECT_EQ(t.decode(Ids{3}, false), "<tool>");  // user-defined text always renders
}

// encode() with literal ranges (a rendered chat's message contents): control-token text inside a
// range stays text, outside it is one token; user-defined tokens match everywhere, also across a
// range's edge; the text around the ranges merges as with a whole-text encode().
TEST(TokenizerBpe, LiteralRangesKeepControlTokensAsText) {
    const Tokenizer t = make({}, {});
    const std::string text = "<|im_start|>a<|im_start|>b<|im_start|>";
    const std::vector<TextSpan> content{{12, 13}};  // "a<|im_start|>"
    const Ids got = t.encode(text, content, false, true);
    Ids want{1};
    const Ids literal = t.encode("a<|im_start|>", false, false);
    want.insert(want.end(), literal.begin(), literal.end());
    want.push_back(id(t, "b"));
    want.push_back(1);
    EXPECT_EQ(got, want);
    // Without ranges, or with empty ones, it is the plain encode().
    EXPECT_EQ(t.encode(text, std::vector<TextSpan>{}, false, true), t.encode(text, false, true));
    EXPECT_EQ(t.encode(text, std::vector<TextSpan>{{12, 0}, {25, 0}}, false, true),
              t.encode(text, false, true));
    // A control token straddling the edge is not matched: half of it is content.
    const Ids straddle = t.encode("<|im_start|>", std::vector<TextSpan>{{0, 3}}, false, true);
    EXPECT_EQ(straddle, t.encode("<|im_start|>", false, false));
    // User-defined tokens match inside and across an edge.
    EXPECT_EQ(t.encode("x<tool>y", std::vector<TextSpan>{{0, 3}}, false, true),
              (Ids{id(t, "x"), 3, id(t, "y")}));
    EXPECT_EQ(t.encode("x<tool>y", std::vector<TextSpan>{{3, 5}}, false, true),
              (Ids{id(t, "x"), 3, id(t, "y")}));
}

TEST(TokenizerBpe, LiteralRangesMustBeSortedDisjointAndInside) {
    const Tokenizer t = make({}, {});
    EXPECT_THROW(t.encode("abcdef", std::vector<TextSpan>{{3, 1}, {1, 1}}, false, true), Error);
    EXPECT_THROW(t.encode("abcdef", std::vector<TextSpan>{{1, 3}, {2, 1}}, false, true), Error);
    EXPECT_THROW(t.encode("abcdef", std::vector<TextSpan>{{4, 3}}, false, true), Error);
}

TEST(TokenizerBpe, LongestSpecialWinsAtAPosition) {
    VocabData d = bpe_data({}, {});
    d.tokens.push_back("<|im_start|>x");
    d.types.push_back(TokenType::Control);
    const Tokenizer t(Vocab::build(std::move(d)));
    const int32_t longer = t.vocab().size() - 1;
    EXPECT_EQ(t.encode("<|im_start|>x<|im_start|>", false, true), (Ids{longer, 1}));
}

TEST(TokenizerBpe, AddSpecialFollowsTheVocabulary) {
    VocabData d = bpe_data({}, {});
    d.add_bos = true;
    d.add_eos = true;
    const Tokenizer t(Vocab::build(std::move(d)));
    EXPECT_EQ(t.encode("a", true, false), (Ids{1, t.vocab().find("a"), 2}));
    EXPECT_EQ(t.encode("", true, false), (Ids{1, 2}));
    EXPECT_EQ(t.encode("a", false, false), (Ids{t.vocab().find("a")}));
}

TEST(TokenizerBpe, ByteLevelRoundTripOfMultiByteText) {
    const Tokenizer t = make({"é"}, {{"\xC3", "\xA9"}});
    const Ids ids = t.encode("é\t\n", false, false);
    EXPECT_EQ(ids, (Ids{id(t, "é"), id(t, "\t"), id(t, "\n")}));
    EXPECT_EQ(t.decode(ids, false), "é\t\n");
    EXPECT_EQ(t.token_to_piece(id(t, "\xC3"), false), "\xC3");
}

TEST(TokenizerBpe, CharactersWithoutATokenAreDroppedBeforeMerging) {
    // "x" has no token here; as in HuggingFace BPE without unk, it vanishes and its neighbours
    // become adjacent (and may merge).
    VocabData d = bpe_data({"ab"}, {{"a", "b"}});
    d.tokens[4 + ('x' - 0x20)] = "no-x";  // printable ASCII starts at id 4
    const Tokenizer t(Vocab::build(std::move(d)));
    EXPECT_EQ(t.encode("axb", false, false), (Ids{t.vocab().find("ab")}));
}

TEST(TokenizerBpe, EmptyAndWhitespaceOnly) {
    const Tokenizer t = make({}, {});
    EXPECT_TRUE(t.encode("", false, true).empty());
    EXPECT_EQ(t.decode(t.encode(" \n\t ", false, true), false), " \n\t ");
}

TEST(TokenizerBpe, LongInputsStayLinear) {
    const Tokenizer t = make({"aa"}, {{"a", "a"}});
    const std::string spaces(200000, ' ');
    EXPECT_EQ(t.decode(t.encode(spaces + "x", false, false), false), spaces + "x");
    const std::string word(200000, 'a');
    EXPECT_EQ(t.encode(word, false, false).size(), 100000u);
}

TEST(TokenizerErrors, InvalidUtf8NamesTheOffset) {
    const Tokenizer t = make({}, {});
    for (const std::string& bad :
         {std::string("ab\xFF"
                      "cd"),
          std::string("ab\xC3"), std::string("ab\xED\xA0\x80"), std::string("ab\xC0\xAF")}) {
        try {
            t.encode(bad, false, true);
            FAIL() << "expected Error";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("byte offset 2"), std::string::npos) << e.what();
        }
    }
}

TEST(TokenizerErrors, OutOfRangeIdsAreErrors) {
    const Tokenizer t = make({}, {});
    EXPECT_THROW(t.token_to_piece(-1, true), Error);
    EXPECT_THROW(t.token_to_piece(t.vocab().size(), true), Error);
    const Ids ids = {0, t.vocab().size() + 5};
    EXPECT_THROW(t.decode(ids, true), Error);
}

}  // namespace
}  // namespace fluoro::tok
