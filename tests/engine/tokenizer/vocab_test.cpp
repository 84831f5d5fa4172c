#include "tokenizer/vocab.h"
#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "engine/tokenizer/tiny_vocabs.h"

namespace fluoro::tok {
namespace {

using test::bl;
using test::bpe_data;
using test::spm_data;

TEST(Vocab, IndexesTokensAndMerges) {
    const Vocab v = Vocab::build(bpe_data({"ab", "abc"}, {{"a", "b"}, {"ab", "c"}}));
    const int32_t ab = v.find(bl("ab"));
    ASSERT_NE(ab, kNoToken);
    EXPECT_EQ(v.text(ab), "ab");
    const MergeRule* m = v.merge(v.find("a"), v.find("b"));
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->rank, 0);
    EXPECT_EQ(m->result, ab);
    EXPECT_EQ(v.merge(ab, v.find("c"))->rank, 1);
    EXPECT_EQ(v.merge(v.find("b"), v.find("a")), nullptr);
    EXPECT_EQ(v.n_merges(), 2u);
    EXPECT_EQ(v.find("zzz"), kNoToken);
    EXPECT_EQ(v.byte_token(' '), v.find(bl(" ")));
}

TEST(Vocab, MergeSplitsAtFirstSpaceAfterIndexZero) {
    // A vocabulary spelled with raw spaces: "  x" is the merge (" ", "x"), not ("", " x").
    VocabData d = bpe_data({}, {});
    for (const char* t : {" ", " x"}) {
        d.tokens.push_back(t);
        d.types.push_back(TokenType::Normal);
    }
    d.merges = {"  x"};
    const Vocab v = Vocab::build(std::move(d));
    const MergeRule* m = v.merge(v.find(" "), v.find("x"));
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->result, v.find(" x"));
}

TEST(Vocab, DuplicateTextIsAWarningAndTheLowestIdWins) {
    VocabData d = bpe_data({}, {});
    d.tokens.push_back("a");
    d.types.push_back(TokenType::Normal);
    const Vocab v = Vocab::build(std::move(d));
    EXPECT_LT(v.find("a"), v.size() - 1);
    ASSERT_FALSE(v.warnings().empty());
    EXPECT_NE(v.warnings().front().find("duplicate"), std::string::npos);
}

TEST(Vocab, MalformedMergeIsAFormatError) {
    VocabData d = bpe_data({}, {});
    d.merges = {"a b", "nospace"};
    try {
        Vocab::build(std::move(d), "model.gguf");
        FAIL() << "expected FormatError";
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.merges[1]"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("model.gguf"), std::string::npos);
    }
}

TEST(Vocab, MergesNamingUnknownTokensAreWarnedAndSkipped) {
    VocabData d = bpe_data({}, {});
    d.merges = {"x y", "qq zz"};  // "xy" and "qq"/"zz" are not tokens
    const Vocab v = Vocab::build(std::move(d));
    EXPECT_EQ(v.n_merges(), 0u);
    ASSERT_FALSE(v.warnings().empty());
    EXPECT_NE(v.warnings().back().find("2 merges"), std::string::npos);
}

TEST(Vocab, ArrayLengthsMustAgree) {
    VocabData d = bpe_data({}, {});
    d.types.pop_back();
    EXPECT_THROW(Vocab::build(std::move(d)), FormatError);
    VocabData s = spm_data({});
    s.scores.push_back(1.0f);
    EXPECT_THROW(Vocab::build(std::move(s)), FormatError);
    VocabData empty;
    EXPECT_THROW(Vocab::build(std::move(empty)), FormatError);
}

TEST(Vocab, SpecialIdOutOfRangeNamesTheKey) {
    VocabData d = bpe_data({}, {});
    d.eos = 100000;
    try {
        Vocab::build(std::move(d), "m.gguf");
        FAIL() << "expected FormatError";
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("eos_token_id"), std::string::npos);
    }
}

// As llama.cpp: an unknown name is refused (another split gives other tokens), a missing one
// means the default regexes with a warning.
TEST(Vocab, UnknownPreTokenizerIsAFormatErrorNamingKeyValueAndFile) {
    try {
        Vocab::build(bpe_data({}, {}, "made-up-pre"), "m.gguf");
        FAIL() << "expected FormatError";
    } catch (const FormatError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("tokenizer.ggml.pre"), std::string::npos) << what;
        EXPECT_NE(what.find("'made-up-pre'"), std::string::npos) << what;
        EXPECT_NE(what.find("m.gguf"), std::string::npos) << what;
    }
}

TEST(Vocab, MissingPreTokenizerWarnsAndUsesDefault) {
    const Vocab v = Vocab::build([] {
        VocabData d = bpe_data({}, {});
        d.pre.reset();
        return d;
    }());
    EXPECT_EQ(v.pre_tokenizer(), PreTokenizer::Default);
    ASSERT_FALSE(v.warnings().empty());
    EXPECT_NE(v.warnings().front().find("tokenizer.ggml.pre"), std::string::npos);
}

// Every name in the table compiles to a working splitter (a typo in a regex fails here, not when
// someone loads that model).
TEST(Vocab, EveryKnownPreTokenizerBuildsATokenizer) {
    for (const PreTokenizerSpec& spec : pre_tokenizer_specs()) {
        SCOPED_TRACE(std::string(spec.name));
        const Vocab v = Vocab::build(bpe_data({}, {}, std::string(spec.name)));
        EXPECT_EQ(v.pre_tokenizer(), spec.family);
        EXPECT_EQ(v.ignore_merges(), spec.ignore_merges);
        RegexSplitter splitter(pre_tokenizer_patterns(spec.family));
        std::vector<TextSpan> pieces, scratch;
        const std::string text = "Hello World's 1234567 \xe4\xbd\xa0\xe5\xa5\xbd\n\n  x";
        splitter.split(text, pieces, scratch);
        size_t covered = 0;
        for (const TextSpan& p : pieces) {
            EXPECT_EQ(p.offset, covered);
            covered += p.length;
        }
        EXPECT_EQ(covered, text.size());
    }
}

TEST(Vocab, PreNamesAndFlags) {
    EXPECT_EQ(Vocab::build(bpe_data({}, {}, "smollm")).pre_tokenizer(), PreTokenizer::Smollm);
    EXPECT_EQ(Vocab::build(bpe_data({}, {}, "qwen2")).pre_tokenizer(), PreTokenizer::Qwen2);
    const Vocab llama3 = Vocab::build(bpe_data({}, {}, "llama-bpe"));
    EXPECT_EQ(llama3.pre_tokenizer(), PreTokenizer::Llama3);
    EXPECT_TRUE(llama3.ignore_merges());
    EXPECT_TRUE(llama3.add_bos());  // llama3's default
    const Vocab gpt2 = Vocab::build(bpe_data({}, {}, "gpt-2"));
    EXPECT_FALSE(gpt2.add_bos());
    EXPECT_FALSE(gpt2.ignore_merges());
    EXPECT_TRUE(gpt2.warnings().empty());
}

TEST(Vocab, SpmDefaults) {
    VocabData d = spm_data({});
    d.bos.reset();
    d.eos.reset();
    d.unk.reset();
    d.add_space_prefix.reset();
    const Vocab v = Vocab::build(std::move(d));
    EXPECT_EQ(v.bos(), 1);
    EXPECT_EQ(v.eos(), 2);
    EXPECT_EQ(v.unk(), 0);
    EXPECT_TRUE(v.add_bos());
    EXPECT_FALSE(v.add_eos());
    EXPECT_TRUE(v.add_space_prefix());
    EXPECT_EQ(v.byte_token(0x0A), 5 + 0x0A);
}

TEST(Vocab, EndOfGenerationSet) {
    const Vocab v = Vocab::build(bpe_data({}, {}));
    // eos = 2 (<|im_end|>, also the eot by text); <|endoftext|> is an end marker by text.
    EXPECT_EQ(v.eot(), 2);
    EXPECT_EQ(v.eog_ids(), (std::vector<int32_t>{0, 2}));
    EXPECT_TRUE(v.is_eog(0));
    EXPECT_FALSE(v.is_eog(1));
}

TEST(Vocab, AddBosWithoutBosIsAnError) {
    VocabData d = spm_data({});
    d.tokens.resize(1);  // only <unk>: the default bos id 1 does not exist
    d.types.resize(1);
    d.scores.resize(1);
    d.bos.reset();
    d.eos.reset();
    EXPECT_THROW(Vocab::build(std::move(d)), FormatError);
}

TEST(Vocab, SpecialIdsAreControlUserDefinedAndUnknown) {
    const Vocab v = Vocab::build(spm_data({}));
    EXPECT_EQ(v.special_ids(), (std::vector<int32_t>{0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace fluoro::tok
