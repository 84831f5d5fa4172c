// `fluoro eval attn` end to end through the built binary, on a small random GQA
// model (4 query heads over 2 KV heads of 32 dims: the quantized KV types need a multiple of 32):
// the file and its MQA merge at each KV type, with the bytes per token the cache really stores,
// every task's results, the merge kept with --keep-dir and removed otherwise, and bad --variant
// specs refused.
#include <stdlib.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "app/cli/fluoro_cli.h"
#include "gguf/gguf_file.h"
#include "gguf/test_model.h"
#include "model/hparams.h"
#include "test_temp.h"

namespace fluoro {
namespace {

// `fluoro eval attn ARGS`, its temporary files going to `tmp` (TMPDIR, inherited).
test::CliResult run_eval_attn(const std::string& args, const std::filesystem::path& tmp,
                              bool with_stderr = true) {
    ::setenv("TMPDIR", tmp.c_str(), 1);
    test::CliResult r = test::run_fluoro("eval attn " + args, with_stderr);
    ::unsetenv("TMPDIR");
    return r;
}

class CmdEvalAttn : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!std::filesystem::exists(test::fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
        gguf::TestModelSpec spec;
        spec.n_embd = 128;
        spec.n_head = 4;
        spec.n_head_kv = 2;
        spec.n_ctx = 1024;
        model_ = test::unique_temp_path("eval_attn_tiny.gguf");
        gguf::write_test_model(model_, spec);
        text_ = test::unique_temp_path("eval_attn_text.txt");
        std::ofstream out(text_);
        // 120 tokens of the test vocabulary each: > the 400 the tasks read, and a calibration
        // chunk of 512 after them.
        for (int i = 0; i < 10; ++i)
            out << "In the beginning was the word, and the word was long enough to hold a few "
                << "hundred tokens of a tiny vocabulary. The quick brown fox jumps over the lazy "
                << "dog again and again. ";
        tmp_ = test::unique_temp_path("eval_attn_tmp");
        std::filesystem::create_directories(tmp_);
    }
    void TearDown() override {
        std::error_code ec;
        std::filesystem::remove_all(tmp_, ec);
    }
    std::string args() const {
        return model_.string() + " --text " + text_.string() +
               " --ppl-tokens 64 --passkey-lengths 400 --depths 0,100 --speed-contexts 300 "
               "--speed-gen 8 -t 2";
    }
    std::filesystem::path model_, text_, tmp_;
};

TEST_F(CmdEvalAttn, JsonHasTheFileAndItsMqaMergeAtEveryKvType) {
    const test::CliResult r = run_eval_attn(args() + " --json", tmp_, false);
    ASSERT_EQ(r.rc, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out;
    EXPECT_EQ(j["fine_tuned"], false);
    // The aligned merge fitted to the text after the passkey prompts' 400 tokens (the most any
    // task reads): one whole chunk of 512 of the 800 left.
    EXPECT_EQ(j["calibration"]["skip"], 400);
    EXPECT_EQ(j["calibration"]["tokens"], 512);
    ASSERT_EQ(j["variants"].size(), 3u);  // the file, its mean and its aligned MQA merges
    const auto& orig = j["variants"][0];
    const auto& mqa = j["variants"][1];
    EXPECT_EQ(j["variants"][2]["name"], "mqa-aligned");
    EXPECT_EQ(j["variants"][2]["kv_bytes_per_token"], mqa["kv_bytes_per_token"]);
    EXPECT_EQ(orig["name"], "original");
    EXPECT_EQ(orig["attention"], "GQA");
    EXPECT_EQ(orig["query_heads_per_kv_head"], 2.0);
    EXPECT_EQ(mqa["name"], "mqa-mean");
    EXPECT_EQ(mqa["attention"], "MQA");
    EXPECT_EQ(mqa["query_heads_per_kv_head"], 4.0);
    EXPECT_EQ(mqa["file"], "");  // temporary: not kept
    // 2 layers x 2 KV heads x (32 + 32) values x 2 bytes (f16); a ggml block's bytes over its 32
    // values for q8_0 (34) and q4_0 (18); one KV head stores half.
    EXPECT_EQ(orig["kv_bytes_per_token"]["f16"], 512);
    EXPECT_EQ(orig["kv_bytes_per_token"]["q8_0"], 272);
    EXPECT_EQ(orig["kv_bytes_per_token"]["q4_0"], 144);
    for (const char* t : {"f16", "q8_0", "q4_0"})
        EXPECT_EQ(2 * mqa["kv_bytes_per_token"][t].get<int64_t>(),
                  orig["kv_bytes_per_token"][t].get<int64_t>())
            << t;
    for (const auto& v : j["variants"]) {
        ASSERT_EQ(v["cells"].size(), 3u) << v;
        for (const auto& c : v["cells"]) {
            EXPECT_EQ(c["policy"], "full");
            EXPECT_TRUE(c["errors"].empty()) << c["errors"];
            EXPECT_EQ(c["ppl"]["tokens"], 64);
            EXPECT_GT(c["ppl"]["ppl"].get<double>(), 1.0);
            EXPECT_EQ(c["passkey"].size(), 2u);
            ASSERT_EQ(c["speed"].size(), 1u);
            EXPECT_GT(c["speed"][0]["tok_s"].get<double>(), 0.0);
        }
    }
    // The merge changed the model: the same text scores differently.
    EXPECT_NE(orig["cells"][0]["ppl"]["ppl"], mqa["cells"][0]["ppl"]["ppl"]);
    EXPECT_TRUE(std::filesystem::is_empty(tmp_));  // the temporary merge was removed
}

TEST_F(CmdEvalAttn, TableHasOneRowPerVariantAndTypeAndKeepDirKeepsTheMerge) {
    const std::filesystem::path keep = tmp_ / "keep";
    std::filesystem::create_directories(keep);
    const test::CliResult r =
        run_eval_attn(args() + " --kv-types f16,q4_0 --tasks ppl --keep-dir " + keep.string() +
                          " --variant again=" + model_.string(),
                      tmp_, false);
    ASSERT_EQ(r.rc, 0) << r.out;
    std::istringstream lines(r.out);
    std::vector<std::string> rows;
    for (std::string l; std::getline(lines, l) && !l.empty();) rows.push_back(l);
    ASSERT_EQ(rows.size(), 9u) << r.out;  // header + 4 variants x 2 types
    EXPECT_EQ(rows[0].rfind("variant", 0), 0u) << r.out;
    EXPECT_NE(rows[0].find("dPPL"), std::string::npos) << rows[0];
    EXPECT_EQ(rows[1].rfind("original", 0), 0u) << r.out;
    EXPECT_NE(rows[1].find("GQA 2:1"), std::string::npos) << rows[1];
    EXPECT_NE(rows[1].find("+0.0%"), std::string::npos) << rows[1];
    EXPECT_NE(rows[1].find("1.000x"), std::string::npos) << rows[1];
    EXPECT_NE(rows[3].find("MQA 4:1"), std::string::npos) << rows[3];
    EXPECT_NE(rows[3].find("0.500x"), std::string::npos) << rows[3];
    // The same file again under another name: the same perplexity as the original's row.
    EXPECT_EQ(rows[5].rfind("mqa-aligned", 0), 0u) << r.out;
    EXPECT_EQ(rows[7].rfind("again", 0), 0u) << r.out;
    EXPECT_NE(rows[7].find("+0.0%"), std::string::npos) << rows[7];
    EXPECT_NE(r.out.find("Training-free conversions"), std::string::npos) << r.out;
    const std::filesystem::path kept = keep / (model_.stem().string() + ".mqa-mean.gguf");
    ASSERT_TRUE(std::filesystem::exists(kept)) << r.out;
    EXPECT_EQ(read_hparams(gguf::GgufFile::open(kept)).n_head_kv[0], 1u);
}

// The MLA conversion at rank 32 keeping 8 of a head's 16 rotary pairs: the absorbed cache holds
// one row per token and layer of 2 x 2 x 8 = 32 RoPE + 32 latent key values, whose latent dims
// the attention reads as the values (the RoPE dims fill a q8_0 block, so q8_0 reads them there
// too): 64 values, 128 bytes at f16 per layer, 256 for both — against the file's
// 2 x 2 x (32 + 32) x 2 x 2 = 512.
TEST_F(CmdEvalAttn, MlaConversionsAreMeasuredBesideTheFile) {
    const test::CliResult r = run_eval_attn(
        args() + " --no-mqa --mla 32 --mla-rope-pairs 8 --kv-types f16,q8_0 --tasks ppl --json",
        tmp_, false);
    ASSERT_EQ(r.rc, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out;
    ASSERT_EQ(j["variants"].size(), 2u);
    const auto& mla = j["variants"][1];
    EXPECT_EQ(mla["name"], "mla-r32");
    EXPECT_EQ(mla["attention"], "MLA");
    EXPECT_EQ(mla["latent_rank"], 32);
    EXPECT_EQ(j["variants"][0]["kv_bytes_per_token"]["f16"], 512);
    EXPECT_EQ(mla["kv_bytes_per_token"]["f16"], 256);
    EXPECT_EQ(mla["kv_bytes_per_token"]["q8_0"], 2 * 2 * 34);  // 2 layers x 2 blocks of 34
    for (const auto& c : mla["cells"]) {
        EXPECT_TRUE(c["errors"].empty()) << c["errors"];
        EXPECT_GT(c["ppl"]["ppl"].get<double>(), 1.0);
    }
    EXPECT_TRUE(std::filesystem::is_empty(tmp_));
}

TEST_F(CmdEvalAttn, BadVariantsAreRefusedByName) {
    test::CliResult r = run_eval_attn(args() + " --no-mqa --variant nofile", tmp_);
    EXPECT_NE(r.rc, 0);
    EXPECT_NE(r.out.find("--variant 'nofile': expected NAME=FILE"), std::string::npos) << r.out;
    r = run_eval_attn(args() + " --no-mqa --tasks ppl --variant x=/nonexistent/m.gguf", tmp_);
    EXPECT_NE(r.rc, 0);
    EXPECT_NE(r.out.find("/nonexistent/m.gguf"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace fluoro
