// llama.cpp's own tokenizer cases: the ggml-vocab-*.gguf vocabularies (tokenizer metadata only,
// no tensors) it ships in models/, each with NAME.gguf.inp (inputs separated by a line
// "__ggml_vocab_test__") and NAME.gguf.out (the expected ids, one line per input, produced by the
// model's HuggingFace tokenizer and checked by llama.cpp's tests/test-tokenizer-0.cpp). As there,
// every input is tokenized without BOS/EOS (add_special = false) and without parsing special
// tokens (parse_special = false), and must give exactly the expected ids. The files come from
// the pinned llama-cpp-python sdist (scripts/fetch-llama-cpp-source.sh) under
// FLUORO_MODELS_DIR/llama-cpp-python-0.3.36/vocab; missing, the tests skip, or fail when
// FLUORO_REQUIRE_MODELS=1.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "test_models.h"
#include "tokenizer/tokenizer.h"

namespace fluoro::tok {
namespace {

using Ids = std::vector<int32_t>;

enum class Expect {
    Cases,        // has .inp/.out: every case must match
    LoadOnly,     // no cases shipped: must load and encode
    Unsupported,  // a tokenizer type we refuse by name (UnsupportedError)
};

struct VocabCase {
    const char* name;  // ggml-vocab-NAME.gguf
    Expect expect;
    // decode(expected ids) gives the input back. False where the tokenizer is lossy by design.
    bool round_trip = true;
    const char* unsupported_type = "";  // for Expect::Unsupported: the type the error names
};

std::ostream& operator<<(std::ostream& os, const VocabCase& c) {
    return os << c.name;
}

// Every ggml-vocab file in llama.cpp's models/ (llama-cpp-python 0.3.36).
const VocabCase kVocabs[] = {
    {"aquila", Expect::LoadOnly},
    {"baichuan", Expect::LoadOnly},
    // WordPiece (BERT): lossy by design - white space becomes word breaks and punctuation is
    // split off, so decoding does not give the input back.
    {"bert-bge", Expect::Cases, false},
    {"command-r", Expect::Cases},
    {"deepseek-coder", Expect::Cases},
    {"deepseek-llm", Expect::Cases},
    {"falcon", Expect::Cases},
    {"gemma-4", Expect::Cases},
    {"gpt-2", Expect::Cases},
    {"gpt-neox", Expect::LoadOnly},
    {"llama-bpe", Expect::Cases},
    {"llama-spm", Expect::Cases},
    {"mpt", Expect::Cases},
    {"nomic-bert-moe", Expect::Unsupported, false, "t5"},
    {"phi-3", Expect::Cases},
    {"qwen2", Expect::Cases},
    {"qwen35", Expect::Cases},
    {"refact", Expect::Cases},
    {"starcoder", Expect::Cases},
};

std::filesystem::path vocab_dir() {
    return ::fluoro::test::models_dir() / "llama-cpp-python-0.3.36" / "vocab";
}

std::string read_all(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

struct TestCase {
    std::string input;
    Ids expected;
};

// As test-tokenizer-0.cpp reads them: the .inp split at "\n__ggml_vocab_test__\n" (the last input
// runs to the end of the file), the .out one line per input with space-separated ids.
std::vector<TestCase> read_cases(const std::filesystem::path& inp,
                                 const std::filesystem::path& out) {
    const std::string raw = read_all(inp);
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> inputs;
    for (size_t pos = 0; pos < raw.size();) {
        const size_t next = raw.find(sep, pos);
        if (next == std::string::npos) {
            inputs.push_back(raw.substr(pos));
            break;
        }
        inputs.push_back(raw.substr(pos, next - pos));
        pos = next + sep.size();
    }
    std::vector<Ids> outputs;
    std::ifstream lines(out);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream s(line);
        Ids ids;
        for (int32_t id; s >> id;) ids.push_back(id);
        outputs.push_back(std::move(ids));
    }
    EXPECT_EQ(inputs.size(), outputs.size()) << inp << " and " << out << " differ in length";
    std::vector<TestCase> cases;
    for (size_t i = 0; i < std::min(inputs.size(), outputs.size()); ++i)
        cases.push_back({inputs[i], outputs[i]});
    return cases;
}

std::string show(const Ids& ids) {
    std::string s;
    for (int32_t i : ids) s += std::to_string(i) + " ";
    return s;
}

std::string escaped(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\r') {
            out += "\\r";
        } else {
            out += c;
        }
    }
    return out;
}

class GgmlVocab : public ::testing::TestWithParam<VocabCase> {};

TEST_P(GgmlVocab, MatchesLlamaCppCases) {
    const VocabCase& c = GetParam();
    const std::string file = std::string("ggml-vocab-") + c.name + ".gguf";
    const std::filesystem::path path = vocab_dir() / file;
    if (!std::filesystem::exists(path)) {
        if (::fluoro::test::models_required())
            FAIL() << path << " missing (FLUORO_REQUIRE_MODELS=1); run "
                   << "scripts/fetch-llama-cpp-source.sh";
        GTEST_SKIP() << path << " not found; run scripts/fetch-llama-cpp-source.sh";
    }
    const auto gguf = gguf::GgufFile::open(path);

    if (c.expect == Expect::Unsupported) {
        try {
            (void)Tokenizer::from_gguf(gguf);
            FAIL() << file << " loaded; expected UnsupportedError naming '" << c.unsupported_type
                   << "'";
        } catch (const UnsupportedError& e) {
            EXPECT_NE(std::string(e.what()).find(std::string("'") + c.unsupported_type + "'"),
                      std::string::npos)
                << e.what();
            EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
        }
        return;
    }

    const Tokenizer tok = Tokenizer::from_gguf(gguf);
    if (c.expect == Expect::LoadOnly) {
        const Ids ids = tok.encode("Hello world, 123 !", false, false);
        EXPECT_FALSE(ids.empty());
        EXPECT_EQ(tok.decode(ids, false), "Hello world, 123 !");
        return;
    }

    const auto cases = read_cases(vocab_dir() / (file + ".inp"), vocab_dir() / (file + ".out"));
    ASSERT_FALSE(cases.empty());
    size_t failed = 0, round_trip_failed = 0;
    for (const TestCase& t : cases) {
        const Ids got = tok.encode(t.input, /*add_special=*/false, /*parse_special=*/false);
        if (got != t.expected && ++failed <= 10)
            ADD_FAILURE() << file << ": '" << escaped(t.input) << "'\n  expected "
                          << show(t.expected) << "\n  got      " << show(got);
        if (c.round_trip) {
            const std::string back = tok.decode(t.expected, /*render_special=*/false);
            if (back != t.input && ++round_trip_failed <= 10)
                ADD_FAILURE() << file << ": decode(" << show(t.expected) << ") = '" << escaped(back)
                              << "', not '" << escaped(t.input) << "'";
        }
    }
    std::printf("[ ggml-vocab ] %s: %zu of %zu cases match llama.cpp\n", c.name,
                cases.size() - failed, cases.size());
    EXPECT_EQ(failed, 0u) << file << ": " << failed << " of " << cases.size() << " cases differ";
    EXPECT_EQ(round_trip_failed, 0u) << file << ": " << round_trip_failed << " decodes differ";
}

INSTANTIATE_TEST_SUITE_P(LlamaCpp, GgmlVocab, ::testing::ValuesIn(kVocabs),
                         [](const ::testing::TestParamInfo<VocabCase>& p) {
                             std::string n = p.param.name;
                             for (char& ch : n)
                                 if (ch == '-') ch = '_';
                             return n;
                         });

}  // namespace
}  // namespace fluoro::tok
