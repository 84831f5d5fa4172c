// `fluoro profile` on SmolLM2: the bytes it says a decode step reads are what the model is —
// every matrix of the file once per token (the tied output head is token_embd, read by the LM
// head's matmul) plus the F16 KV rows up to each step's position — and its times add up to no
// more than the steps' wall time. With --bandwidth the roofline is bytes ÷ bandwidth.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "app/cli/fluoro_cli.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "test_models.h"
#include "test_temp.h"

namespace fluoro {
namespace {

using nlohmann::json;

TEST(CmdProfile, SmolLM2BytesAreTheModelsMatricesAndItsKv) {
    if (!std::filesystem::exists(test::fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    const test::CliResult r =
        test::run_fluoro("profile " + test::quoted(path.string()) +
                         "-t 1 --prompt-tokens 64 --decode-tokens 8 --bandwidth 20 --json");
    ASSERT_EQ(r.rc, 0) << r.out;
    const json j = json::parse(r.out);
    const json& d = j["decode"];
    double weights = 0, kv = 0, op_ms = 0;
    for (const json& c : d["categories"]) {
        const double bytes = c["mib_per_token"].get<double>() * (1 << 20);
        (c["category"] == "attention" ? kv : weights) += bytes;
        op_ms += c["ms_per_token"].get<double>();
    }
    // Every matrix (2-D tensor) of the file: read once per decode step.
    const gguf::GgufFile f = gguf::GgufFile::open(path);
    double matrices = 0;
    for (const gguf::TensorInfo& t : f.tensors())
        if (t.n_dims >= 2) matrices += double(t.n_bytes);
    EXPECT_NEAR(weights, matrices, 1.0);
    // Steps at positions 64..71 read keys 0..p: 65..72 rows, 68.5 on average, of 30 layers x 3
    // KV heads x (64 + 64) x 2 bytes = 23040 bytes.
    EXPECT_NEAR(kv, 68.5 * 23040, 1.0);
    EXPECT_LE(op_ms, d["ms_per_token"].get<double>() * 1.001);
    EXPECT_NEAR(d["roofline_tokens_per_s"].get<double>(), 20e9 / (matrices + 68.5 * 23040),
                1e-6 * d["roofline_tokens_per_s"].get<double>());
    EXPECT_FALSE(j["prefill"].contains("roofline_tokens_per_s"));  // compute-bound: none
    EXPECT_EQ(j["bandwidth_source"], "--bandwidth");
    // Per op: every matrix once per token again, summed over the layers; one thread never waits
    // for another, so no op has an engine-wait share.
    double op_bytes = 0;
    for (const json& op : d["ops"]) {
        if (op["op"] != "attention") op_bytes += op["mib_per_token"].get<double>() * (1 << 20);
        EXPECT_FALSE(op.contains("engine_wait_share")) << op["op"];
    }
    EXPECT_NEAR(op_bytes, matrices, 1.0);
}

TEST(CmdProfile, BadArgumentsAreErrors) {
    if (!std::filesystem::exists(test::fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const test::CliResult r = test::run_fluoro("profile /nonexistent.gguf --prompt-tokens 1");
    EXPECT_NE(r.rc, 0);
    EXPECT_NE(r.out.find("--prompt-tokens must be 2..8192"), std::string::npos) << r.out;
}

// A vocabulary that spells no text (a synthetic file whose tokens are "<tN>" with no merges, as
// scripts/make_mla_bench_model.py writes): the profile's prompt text encodes to nothing, and the
// command divided by that (SIGFPE) before it fell back to token ids. On the deepseek2 fixture
// rewritten so, on both MLA paths.
TEST(CmdProfile, AVocabularyWithoutTextIsProfiledFromTokenIds) {
    if (!std::filesystem::exists(test::fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const gguf::GgufFile f = gguf::GgufFile::open(test::fixtures_dir() / "arch_deepseek2.gguf");
    gguf::GgufWriter w;
    w.set_alignment(f.alignment());
    for (const gguf::KeyValue& kv : f.metadata()) {
        if (kv.key == "general.alignment") continue;
        if (kv.key == "tokenizer.ggml.tokens") {
            std::vector<std::string> tokens;
            for (size_t i = 0; i < kv.value.array_size(); ++i)
                tokens.push_back("<t" + std::to_string(i) + ">");
            w.add_string_array(kv.key, tokens);
        } else if (kv.key == "tokenizer.ggml.merges") {
            w.add_string_array(kv.key, {});
        } else {
            w.add(kv.key, kv.value);
        }
    }
    for (const gguf::TensorInfo& t : f.tensors())
        w.add_tensor(t.name, t.type, {t.ne.begin(), t.ne.begin() + t.n_dims}, f.tensor_data(t));
    const auto path = test::unique_temp_path("no_text_vocab.gguf");
    w.write(path);
    for (const char* mla : {"absorbed", "naive"}) {
        const test::CliResult r = test::run_fluoro(
            "profile " + test::quoted(path.string()) +
            "-t 1 --prompt-tokens 16 --decode-tokens 2 --bandwidth 20 --json --mla " + mla);
        ASSERT_EQ(r.rc, 0) << mla << ": " << r.out;
        EXPECT_GT(json::parse(r.out)["decode"]["ms_per_token"].get<double>(), 0) << mla;
    }
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace fluoro
