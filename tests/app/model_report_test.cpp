// `fluoro info` figures for both default models, checked against facts read independently
// (the gguf Python package, see docs/FORMATS.md) — and the CLI's behaviour on a broken file.
#include "report/model_report.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <vector>

#include "core/error.h"
#include "test_models.h"
#include "test_paths.h"
#include "test_temp.h"

namespace fluoro::app {
namespace {

using nlohmann::json;

uint64_t mix_count(const json& report, const std::string& type) {
    for (const auto& m : report["type_mix"])
        if (m["type"] == type) return m["tensors"];
    return 0;
}

TEST(ModelReport, SmolLM2Figures) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    const json r = model_report_json(path, {});
    EXPECT_EQ(r["architecture"], "llama");
    EXPECT_EQ(r["file_type"], "Q4_1");
    EXPECT_EQ(r["params"], 134515008u);
    EXPECT_EQ(r["tensor_count"], 272u);
    EXPECT_EQ(r["tensors"].size(), 272u);
    EXPECT_EQ(r["file_bytes"], 98362432u);
    const json& hp = r["hparams"];
    EXPECT_EQ(hp["block_count"], 30u);
    EXPECT_EQ(hp["embedding_length"], 576u);
    EXPECT_EQ(hp["head_count"][0], 9u);
    EXPECT_EQ(hp["head_count_kv"][29], 3u);
    EXPECT_EQ(hp["feed_forward_length"][0], 1536u);
    EXPECT_EQ(hp["head_dim_k"], 64u);
    EXPECT_EQ(hp["context_length"], 8192u);
    EXPECT_EQ(hp["vocab_size"], 49152u);
    EXPECT_DOUBLE_EQ(hp["rope_freq_base"].get<double>(), 100000.0);
    // 30 layers x 3 KV heads x (64 + 64) x 2 bytes = 23040 = 22.5 KiB (DESIGN's figure).
    EXPECT_EQ(r["kv_bytes_per_token_f16"], 23040u);
    EXPECT_TRUE(r["tied_output"].get<bool>());
    EXPECT_EQ(mix_count(r, "q4_1"), 210u);
    EXPECT_EQ(mix_count(r, "f32"), 61u);
    EXPECT_EQ(mix_count(r, "q8_0"), 1u);
    const json& tok = r["tokenizer"];
    EXPECT_EQ(tok["model"], "gpt2");
    EXPECT_EQ(tok["pre"], "smollm");
    EXPECT_EQ(tok["tokens"], 49152u);
    EXPECT_EQ(tok["merges"], 48900u);
    EXPECT_EQ(tok["special"][0]["role"], "bos");
    EXPECT_EQ(tok["special"][0]["text"], "<|im_start|>");
    EXPECT_EQ(tok["special"][1]["text"], "<|im_end|>");
    // The file's own template is rendered (Jinja); its markup is ChatML's.
    EXPECT_EQ(r["chat_template"]["name"], "jinja");
    EXPECT_EQ(r["chat_template"]["family"], "chatml");
    EXPECT_EQ(r["chat_template"]["source"], "template text");
    EXPECT_FALSE(r["chat_template"].contains("note"));
    // 9 query heads over 3 KV heads, no window, no sinks.
    EXPECT_EQ(r["attention"]["variant"], "GQA");
    EXPECT_DOUBLE_EQ(r["attention"]["query_heads_per_kv_head"].get<double>(), 3.0);
    EXPECT_FALSE(r["attention"].contains("sliding_window"));
    EXPECT_FALSE(r["attention"]["sinks"].get<bool>());
}

TEST(ModelReport, Gemma3Figures) {
    FLUORO_REQUIRE_MODEL(path, test::kGemma3File);
    const json r = model_report_json(path, {.tensors = false});
    EXPECT_EQ(r["architecture"], "gemma3");
    EXPECT_EQ(r["file_type"], "Q4_K_M");
    EXPECT_EQ(r["params"], 268098176u);
    EXPECT_EQ(r["tensor_count"], 236u);
    EXPECT_FALSE(r.contains("tensors"));
    const json& hp = r["hparams"];
    EXPECT_EQ(hp["block_count"], 18u);
    EXPECT_EQ(hp["embedding_length"], 640u);
    EXPECT_EQ(hp["head_count"][0], 4u);
    EXPECT_EQ(hp["head_count_kv"][0], 1u);
    EXPECT_EQ(hp["head_dim_k"], 256u);
    EXPECT_EQ(hp["sliding_window"], 512u);
    EXPECT_EQ(hp["vocab_size"], 262144u);
    // 18 layers x 1 KV head x (256 + 256) x 2 bytes.
    EXPECT_EQ(r["kv_bytes_per_token_f16"], 18432u);
    EXPECT_EQ(mix_count(r, "q5_0"), 81u);
    EXPECT_EQ(mix_count(r, "q4_K"), 27u);
    EXPECT_EQ(mix_count(r, "q6_K"), 9u);
    EXPECT_EQ(mix_count(r, "q8_0"), 10u);
    EXPECT_EQ(r["tokenizer"]["model"], "llama");
    // This file ships no template: the Gemma family is rendered, and the report says so.
    EXPECT_EQ(r["chat_template"]["name"], "gemma");
    EXPECT_EQ(r["chat_template"]["source"], "architecture (no template in file)");
    EXPECT_EQ(r["chat_template"]["note"],
              "no chat template in the file; using the gemma format its architecture 'gemma3' "
              "implies");
    // One KV head (MQA); every layer but each sixth (5, 11, 17) slides over 512 keys.
    EXPECT_EQ(r["attention"]["variant"], "MQA");
    EXPECT_EQ(r["attention"]["sliding_window"]["keys"], 512);
    const std::vector<int64_t> global{5, 11, 17};
    std::vector<int64_t> local;
    for (int64_t il = 0; il < 18; ++il)
        if (il % 6 != 5) local.push_back(il);
    EXPECT_EQ(r["attention"]["sliding_window"]["layers"].get<std::vector<int64_t>>(), local);
}

// gpt-oss: GQA 2:1 in the fixture, windows on the even layers, a sink logit per head — in the
// JSON and in the text report's one line.
TEST(ModelReport, GptOssAttention) {
    const json r = model_report_json(test::fixtures_dir() / "arch_gpt_oss.gguf", {});
    EXPECT_EQ(r["attention"]["variant"], "GQA");
    EXPECT_EQ(r["attention"]["sliding_window"]["keys"], 32);
    EXPECT_EQ(r["attention"]["sliding_window"]["layers"], json::array({0, 2}));
    EXPECT_TRUE(r["attention"]["sinks"].get<bool>());
    const std::string text = model_report_text(r);
    EXPECT_NE(text.find("GQA (2 query heads per KV head) · sliding window of 32 keys on 2 of 4 "
                        "layers (0, 2) · learned sink logit per head"),
              std::string::npos)
        << text;
}

// A mixture of experts: its counts, and the parameters one token uses. Figures from the gguf
// package: python3 -c "import gguf; r = gguf.GGUFReader('arch_qwen3moe.gguf'); ..." summing
// n_elements of every tensor (261760) and of the *_exps tensors (147456): 6 of 8 experts idle,
// 261760 - 147456 * 6 / 8 = 151168 active.
TEST(ModelReport, MixtureOfExpertsFigures) {
    const json r = model_report_json(test::fixtures_dir() / "arch_qwen3moe.gguf", {});
    EXPECT_EQ(r["architecture"], "qwen3moe");
    EXPECT_EQ(r["params"], 261760u);
    EXPECT_EQ(r["experts"]["total"], 8u);
    EXPECT_EQ(r["experts"]["active"], 2u);
    EXPECT_EQ(r["experts"]["active_params"], 151168u);
    EXPECT_EQ(r["hparams"]["expert_feed_forward_length"], 32u);
    const std::string text = model_report_text(r);
    EXPECT_NE(text.find("experts                 8, 2 active per token"), std::string::npos)
        << text;
    // A dense model has no experts entry.
    EXPECT_FALSE(
        model_report_json(test::fixtures_dir() / "arch_qwen3.gguf", {}).contains("experts"));
}

TEST(ModelReport, TextReportNamesTheEssentials) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    const std::string text = model_report_text(model_report_json(path, {}));
    for (const char* needle :
         {"llama", "Q4_1", "134.52 M", "22.50 KiB", "blk.29.ffn_down.weight", "chatml", "smollm"})
        EXPECT_NE(text.find(needle), std::string::npos) << needle;
}

TEST(ModelReport, MissingFileIsAnErrorNamingIt) {
    try {
        model_report_json("/nonexistent/model.gguf", {});
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/model.gguf"), std::string::npos)
            << e.what();
    }
}

// The CLI turns a broken file into one line on stderr and exit code 1 (no crash).
TEST(FluoroCli, InfoOnTruncatedFileFailsCleanly) {
    const std::string bad = fluoro::test::unique_temp_path("truncated.gguf").string();
    std::ofstream(bad, std::ios::binary) << "GGUF\x03";
    const std::string cmd = std::string(FLUORO_CLI_PATH) + " info " + bad + " 2>&1";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
    ASSERT_TRUE(pipe);
    std::string out;
    std::array<char, 256> buf{};
    while (fgets(buf.data(), buf.size(), pipe.get())) out += buf.data();
    const int status = pclose(pipe.release());
    EXPECT_EQ(WEXITSTATUS(status), 1) << out;
    EXPECT_NE(out.find("truncated.gguf"), std::string::npos) << out;
    EXPECT_NE(out.find("fluoro: "), std::string::npos) << out;
}

}  // namespace
}  // namespace fluoro::app
