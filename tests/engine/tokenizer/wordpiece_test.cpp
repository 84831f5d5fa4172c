// WordPiece on a hand-made vocabulary: the word split (white space, punctuation, ASCII symbols,
// CJK ideographs), greedy longest pieces, [UNK] for a word no pieces spell, [CLS] ... [SEP] with
// add_special, and BERT's normalizer (lowercase, NFD with combining marks dropped). llama.cpp's
// own cases for a real BERT vocabulary are in ggml_vocab_test.cpp (bert-bge).
#include "tokenizer/wordpiece.h"

#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_nfd.h"

namespace fluoro::tok {
namespace {

using Ids = std::vector<int32_t>;

// ids: 0 [PAD], 1 [UNK], 2 [CLS], 3 [SEP], then the pieces below from 4.
Tokenizer make(std::optional<bool> lowercase, std::optional<bool> strip_accents) {
    VocabData d;
    d.model = TokenizerModel::Wpm;
    d.tokens = {"[PAD]",
                "[UNK]",
                "[CLS]",
                "[SEP]",
                "\xe2\x96\x81play",
                "ing",
                "\xe2\x96\x81the",
                "\xe2\x96\x81game",
                "\xe2\x96\x81!",
                "\xe2\x96\x81" "apfel",
                "\xe2\x96\x81"
                "\xe4\xb8\xad",
                "\xe2\x96\x81"
                "\xe6\x96\x87",
                "\xe2\x96\x81$",
                "\xe2\x96\x81\xe1\x84\x80"};
    d.types = {TokenType::Control, TokenType::Unknown, TokenType::Control, TokenType::Control};
    d.types.resize(d.tokens.size(), TokenType::Normal);
    d.pad = 0;
    d.unk = 1;
    d.bos = 2;
    d.sep = 3;
    d.lowercase = lowercase;
    d.strip_accents = strip_accents;
    return Tokenizer(Vocab::build(std::move(d)));
}

TEST(WordPiece, WordsAreCutIntoTheLongestPieces) {
    const Tokenizer t = make(true, true);
    EXPECT_EQ(t.encode("Playing the  game!", false, false), (Ids{4, 5, 6, 7, 8}));
    // add_special: [CLS] first, [SEP] last (BERT's pair of markers).
    EXPECT_EQ(t.encode("the game", true, false), (Ids{2, 6, 7, 3}));
    // A word with a part no piece spells is one [UNK], whatever of it could be spelled.
    EXPECT_EQ(t.encode("the gamex game", false, false), (Ids{6, 1, 7}));
    // CJK ideographs and ASCII symbols are words of their own; control characters vanish.
    EXPECT_EQ(t.encode("\xe4\xb8\xad\xe6\x96\x87$the\x01", false, false), (Ids{10, 11, 12, 6}));
    EXPECT_EQ(t.decode(t.encode("playing the game", false, false), false), "playing the game");
}

TEST(WordPiece, TheNormalizerLowercasesAndStripsAccentsByDefault) {
    // Defaults as llama.cpp's: lowercase, and strip accents when lowercasing.
    EXPECT_EQ(make(std::nullopt, std::nullopt).encode("\xc3\x84pfel", false, false), (Ids{9}));
    // A decomposed accent typed as a combining mark is dropped too.
    EXPECT_EQ(make(std::nullopt, std::nullopt).encode("A\xcc\x88pfel", false, false), (Ids{9}));
    // Cased vocabularies keep case and accents: "Äpfel" is then unknown here.
    EXPECT_EQ(make(false, std::nullopt).encode("\xc3\x84pfel", false, false), (Ids{1}));
    EXPECT_EQ(make(false, false).encode("apfel", false, false), (Ids{9}));
    // Lowercasing without stripping keeps the umlaut: "äpfel" is unknown.
    EXPECT_EQ(make(true, false).encode("\xc3\x84pfel", false, false), (Ids{1}));
}

TEST(UnicodeNfd, TableAndHangulFormula) {
    std::u32string out;
    append_nfd(U'\u00C4', out);  // Ä = A + COMBINING DIAERESIS
    EXPECT_EQ(out, U"A\u0308");
    out.clear();
    append_nfd(U'\u1E69', out);  // ṩ = s + dot below + dot above (recursive in the data)
    EXPECT_EQ(out, U"s\u0323\u0307");
    out.clear();
    append_nfd(U'\uD55C', out);  // 한 = ᄒ ᅡ ᆫ
    EXPECT_EQ(out, U"\u1112\u1161\u11AB");
    out.clear();
    append_nfd(U'x', out);
    EXPECT_EQ(out, U"x");
}

}  // namespace
}  // namespace fluoro::tok
