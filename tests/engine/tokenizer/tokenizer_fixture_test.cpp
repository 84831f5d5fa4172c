// The real default models against tests/reference/fixtures/tokenizer_*.json, which hold the ids
// independent reference tokenizers produce (HuggingFace tokenizers for SmolLM2, SentencePiece
// for Gemma 3; see tests/reference/make_tokenizer_fixtures.py). Every entry must match exactly.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "test_models.h"
#include "tokenizer/tokenizer.h"

namespace fluoro::tok {
namespace {

using json = nlohmann::json;
using Ids = std::vector<int32_t>;

json load_fixture(const char* name) {
    std::ifstream in(::fluoro::test::fixtures_dir() / name);
    EXPECT_TRUE(in) << "missing fixture " << name;
    return json::parse(in);
}

std::string show(const Ids& ids) {
    std::string s;
    for (int32_t i : ids) s += std::to_string(i) + " ";
    return s;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Loads the model's tokenizer (timed) and checks the vocabulary facts the fixture recorded.
Tokenizer load_checked(const std::filesystem::path& path, const json& fx) {
    const auto file = gguf::GgufFile::open(path);
    const auto t0 = std::chrono::steady_clock::now();
    Tokenizer tok = Tokenizer::from_gguf(file);
    const double load_s = seconds_since(t0);
    std::printf("[ tokenizer ] vocabulary load %.3f s\n", load_s);  // a figure, not a bound
    const Vocab& v = tok.vocab();
    const json& f = fx["vocab"];
    EXPECT_EQ(v.size(), f["n_tokens"].get<int32_t>());
    EXPECT_EQ(model_name(v.model()), f["model"].get<std::string>());
    EXPECT_EQ(v.pre_name(), f["pre"].get<std::string>());
    EXPECT_EQ(v.bos(), f["bos"].get<int32_t>());
    EXPECT_EQ(v.eos(), f["eos"].get<int32_t>());
    EXPECT_EQ(v.unk(), f["unk"].get<int32_t>());
    EXPECT_EQ(v.pad(), f["pad"].get<int32_t>());
    EXPECT_EQ(v.add_bos(), f["add_bos"].get<bool>());
    EXPECT_EQ(v.add_space_prefix(), f["add_space_prefix"].get<bool>());
    if (v.model() == TokenizerModel::Bpe) {
        EXPECT_EQ(v.n_merges(), f["n_merges"].get<size_t>());
    }
    return tok;
}

void check_entries(const Tokenizer& tok, const json& fx) {
    size_t checked = 0;
    for (const json& e : fx["entries"]) {
        const std::string name = e["name"];
        const std::string text = e["text"];
        const Ids want_special = e["ids_special"].get<Ids>();
        const Ids want_text = e["ids_text"].get<Ids>();
        const Ids got_special = tok.encode(text, false, true);
        const Ids got_text = tok.encode(text, false, false);
        EXPECT_EQ(got_special, want_special)
            << name << " (parse_special)\n got: " << show(got_special)
            << "\nwant: " << show(want_special);
        EXPECT_EQ(got_text, want_text)
            << name << " (text)\n got: " << show(got_text) << "\nwant: " << show(want_text);
        EXPECT_EQ(tok.decode(got_special, true), text) << name;
        EXPECT_EQ(tok.decode(got_text, true), text) << name;
        EXPECT_EQ(tok.decode(got_text, false), text) << name;

        StreamingDecoder stream(tok, true);
        std::string streamed;
        for (int32_t id : got_special) streamed += stream.push(id);
        streamed += stream.flush();
        EXPECT_EQ(streamed, text) << name << " (streaming)";
        ++checked;
    }
    EXPECT_GE(checked, 60u);
}

// ~100 KB of the corpus's mixed text round-trips; the encode time is printed (timing bounds
// belong in benchmarks, not in tests that run on a loaded CI machine).
void check_speed(const Tokenizer& tok, const json& fx) {
    std::string big;
    while (big.size() < 100 * 1024)
        for (const json& e : fx["entries"]) big += e["text"].get<std::string>() + "\n";
    const auto t0 = std::chrono::steady_clock::now();
    const Ids ids = tok.encode(big, false, true);
    const double s = seconds_since(t0);
    std::printf("[ tokenizer ] encoding %zu bytes: %.3f s\n", big.size(), s);
    EXPECT_EQ(tok.decode(ids, true), big);
}

TEST(TokenizerFixture, SmolLM2MatchesHuggingFaceTokenizers) {
    FLUORO_REQUIRE_MODEL(path, ::fluoro::test::kSmolLM2File);
    const json fx = load_fixture("tokenizer_smollm2.json");
    const Tokenizer tok = load_checked(path, fx);
    const Vocab& v = tok.vocab();
    EXPECT_EQ(v.pre_tokenizer(), PreTokenizer::Smollm);
    EXPECT_TRUE(v.warnings().empty()) << v.warnings().front();
    EXPECT_EQ(v.eot(), 2);  // <|im_end|>
    EXPECT_EQ(v.eog_ids(), (Ids{0, 2}));
    EXPECT_EQ(tok.encode("Hi", true, true), tok.encode("Hi", false, true));  // add_bos = false
    check_entries(tok, fx);
    check_speed(tok, fx);
}

TEST(TokenizerFixture, Gemma3MatchesSentencePiece) {
    FLUORO_REQUIRE_MODEL(path, ::fluoro::test::kGemma3File);
    const json fx = load_fixture("tokenizer_gemma3.json");
    const Tokenizer tok = load_checked(path, fx);
    const Vocab& v = tok.vocab();
    EXPECT_EQ(v.model(), TokenizerModel::Spm);
    EXPECT_EQ(v.eot(), 106);  // <end_of_turn>
    EXPECT_EQ(v.eog_ids(), (Ids{1, 106}));
    EXPECT_EQ(v.byte_token(0x0A), 238 + 0x0A);
    Ids with_bos = {2};
    for (int32_t id : tok.encode("Hi", false, true)) with_bos.push_back(id);
    EXPECT_EQ(tok.encode("Hi", true, true), with_bos);  // add_bos = true
    check_entries(tok, fx);
    check_speed(tok, fx);
}

}  // namespace
}  // namespace fluoro::tok
