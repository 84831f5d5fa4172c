// `fluoro eval kv` end to end through the built binary (FLUORO_CLI_PATH): unknown policy, KV type
// and task names fail before the model is loaded with a message listing the valid ones; on a small
// random model the table, --json and --csv carry one entry per configuration and metric.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "gguf/test_model.h"
#include "test_paths.h"
#include "test_temp.h"

namespace fluoro {
namespace {

std::filesystem::path fluoro_binary() {
    return FLUORO_CLI_PATH;
}

struct CliRun {
    int rc = -1;
    std::string out;  // stdout, or stdout + stderr
};

CliRun run_eval_kv(const std::string& args, bool with_stderr = true) {
    const std::string cmd =
        fluoro_binary().string() + " eval kv " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
    CliRun r;
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) return r;
    char buf[4096];
    while (const size_t n = fread(buf, 1, sizeof buf, pipe)) r.out.append(buf, n);
    const int status = pclose(pipe);
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

class CmdEvalKv : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!std::filesystem::exists(fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    }
};

TEST_F(CmdEvalKv, UnknownNamesFailWithTheValidOnes) {
    // The model does not exist: the lists are checked before it is loaded.
    const std::string model = "/nonexistent/model.gguf";
    CliRun r = run_eval_kv(model + " --policies full,lru");
    EXPECT_EQ(r.rc, 1);
    EXPECT_NE(r.out.find("--policies: unknown name 'lru'; valid: full, window, streaming, h2o, "
                         "scissorhands, snapkv"),
              std::string::npos)
        << r.out;
    r = run_eval_kv(model + " --kv-types f16,q5_1");
    EXPECT_EQ(r.rc, 1);
    EXPECT_NE(r.out.find("--kv-types: unknown name 'q5_1'; valid: f32, f16, q8_0, q4_0"),
              std::string::npos)
        << r.out;
    r = run_eval_kv(model + " --tasks ppl,mmlu");
    EXPECT_EQ(r.rc, 1);
    EXPECT_NE(r.out.find("--tasks: unknown name 'mmlu'; valid: ppl, passkey, speed"),
              std::string::npos)
        << r.out;
    r = run_eval_kv(model + " --budgets 50%,0%");
    EXPECT_EQ(r.rc, 1);
    EXPECT_NE(r.out.find("--budgets: '0%'"), std::string::npos) << r.out;
    r = run_eval_kv(model + " --depths 0,150");
    EXPECT_EQ(r.rc, 1);
    EXPECT_NE(r.out.find("--depths: '150'"), std::string::npos) << r.out;
    r = run_eval_kv(model + " --passkey-format yaml");
    EXPECT_EQ(r.rc, 1);
    EXPECT_NE(r.out.find("valid: auto, chat, plain"), std::string::npos) << r.out;
    r = run_eval_kv(model + " --tasks ppl --text /nonexistent/text.txt");
    EXPECT_EQ(r.rc, 1);
    EXPECT_NE(r.out.find("cannot read the text file '/nonexistent/text.txt'"), std::string::npos)
        << r.out;
}

class CmdEvalKvTiny : public CmdEvalKv {
  protected:
    void SetUp() override {
        CmdEvalKv::SetUp();
        if (IsSkipped()) return;
        gguf::TestModelSpec spec;
        spec.n_ctx = 1024;
        model_ = test::unique_temp_path("eval_kv_tiny.gguf");
        gguf::write_test_model(model_, spec);
        text_ = test::unique_temp_path("eval_kv_text.txt");
        std::ofstream(text_) << std::string(40, 'x') << " the cat sat on the mat. "
                             << "In the beginning was the word, and the word was long enough "
                             << "to hold a few hundred tokens of a tiny vocabulary. "
                             << "The quick brown fox jumps over the lazy dog again and again.";
        csv_ = test::unique_temp_path("eval_kv.csv");
    }
    std::string args() const {
        return model_.string() + " --text " + text_.string() +
               " --policies full,window --budgets 50% --tasks ppl,passkey --ppl-tokens 64 "
               "--bucket 16 --passkey-lengths 400 --depths 0,100 -t 2 --csv " +
               csv_.string();
    }
    std::filesystem::path model_, text_, csv_;
};

TEST_F(CmdEvalKvTiny, JsonAndCsvHaveEveryConfigurationAndMetric) {
    const CliRun r = run_eval_kv(args() + " --json", false);
    ASSERT_EQ(r.rc, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out;
    EXPECT_EQ(j["passkey_format"], "chat");  // auto: the test model carries a ChatML template
    ASSERT_EQ(j["cells"].size(), 2u);
    EXPECT_EQ(j["cells"][0]["policy"], "full");
    EXPECT_EQ(j["cells"][0]["budget"], "100%");
    EXPECT_EQ(j["cells"][1]["policy"], "window");
    EXPECT_EQ(j["cells"][1]["budget"], "50%");
    for (const auto& c : j["cells"]) {
        EXPECT_TRUE(c["errors"].empty()) << c["errors"];
        EXPECT_EQ(c["ppl"]["tokens"], 64);
        EXPECT_EQ(c["ppl"]["bucket_nll"].size(), 4u);
        ASSERT_EQ(c["passkey"].size(), 2u);
        EXPECT_EQ(c["passkey"][0]["length"], 400);
        EXPECT_EQ(c["passkey"][0]["key"].get<std::string>().size(), 5u);
    }
    EXPECT_EQ(j["cells"][0]["ppl"]["evicted_tokens"], 0);
    EXPECT_GT(j["cells"][1]["ppl"]["evicted_tokens"], 0);
    EXPECT_EQ(j["cells"][1]["ppl"]["budget_tokens"], 32);

    std::ifstream in(csv_);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string csv = ss.str();
    EXPECT_EQ(csv.rfind("model,policy,budget,budget_tokens,kv_type,task,length,depth,position,"
                        "metric,value,note\n",
                        0),
              0u);
    for (const char* needle :
         {",full,100%,64,f16,ppl,64,,,ppl,", ",window,50%,32,f16,ppl,64,,,ppl,",
          ",window,50%,32,f16,ppl,64,,16,nll,", ",full,100%,0,f16,passkey,400,,,accuracy,",
          ",f16,passkey,400,100,,found,", ",f16,passkey,400,0,,needle_kept,"})
        EXPECT_NE(csv.find(needle), std::string::npos) << needle << "\n" << csv;
}

TEST_F(CmdEvalKvTiny, TablePrintsOneLinePerConfigurationAndTheNllCurve) {
    const CliRun r = run_eval_kv(args(), false);
    ASSERT_EQ(r.rc, 0) << r.out;
    std::istringstream lines(r.out);
    std::string header, full, window;
    std::getline(lines, header);
    std::getline(lines, full);
    std::getline(lines, window);
    EXPECT_EQ(header.rfind("policy", 0), 0u) << r.out;
    EXPECT_NE(header.find("pk@400"), std::string::npos) << header;
    EXPECT_EQ(full.rfind("full ", 0), 0u) << r.out;
    EXPECT_NE(full.find("+0.0%"), std::string::npos) << full;
    EXPECT_EQ(window.rfind("window", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("mean NLL per 16 positions"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("window/50%/f16"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace fluoro
