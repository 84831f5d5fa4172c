// `fluoro attn MODEL --prompt ... --json` end to end: the built `fluoro` binary (next to this
// test binary's folder: build/app/fluoro) run on SmolLM2 with each attention implementation; the
// JSON has every layer and head with sparsity readouts in range, the asked rows sum to 1, and
// flash and standard agree on layer 0 (the same inputs either way). Skipped when the binary or
// the model is missing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>

#include "test_models.h"

namespace fluoro {
namespace {

std::filesystem::path fluoro_binary() {
    const auto self = std::filesystem::read_symlink("/proc/self/exe");
    return self.parent_path().parent_path() / "app" / "fluoro";
}

nlohmann::json run_attn(const std::filesystem::path& model, const std::string& impl) {
    const std::string cmd = fluoro_binary().string() + " attn '" + model.string() +
                            "' --prompt 'The capital of France is Paris. The capital of Italy "
                            "is' --layer 2 --head 1 --rows 2 --threads 2 --attention " +
                            impl + " --json";
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) return {};
    std::string out;
    char buf[4096];
    while (const size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
    EXPECT_EQ(pclose(pipe), 0) << cmd;
    return nlohmann::json::parse(out, nullptr, false);
}

TEST(CmdAttn, PrintsSparsityOfEveryLayerAndHeadAndTheAskedRows) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    if (!std::filesystem::exists(fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const nlohmann::json flash = run_attn(path, "flash");
    const nlohmann::json standard = run_attn(path, "standard");
    ASSERT_FALSE(flash.is_discarded());
    ASSERT_FALSE(standard.is_discarded());
    EXPECT_EQ(flash["attention"], "flash");
    EXPECT_EQ(standard["attention"], "standard");
    const int64_t n_tokens = flash["n_tokens"];
    ASSERT_GT(n_tokens, 4);
    ASSERT_EQ(flash["layers"].size(), 30u);
    for (const auto& layer : flash["layers"]) {
        EXPECT_EQ(layer["n_keys"], n_tokens);
        ASSERT_EQ(layer["heads"].size(), 9u);
        for (const auto& h : layer["heads"]) {
            EXPECT_GE(double(h["entropy"]), 0.0);
            EXPECT_LE(double(h["entropy"]), std::log(double(n_tokens)) + 1e-4);
            EXPECT_LE(double(h["top_k_mass"]), 1.0 + 1e-5);
            EXPECT_GE(double(h["below_threshold"]), 0.0);
            EXPECT_LE(double(h["sink_mass"]), 1.0 + 1e-5);
        }
    }
    ASSERT_EQ(flash["rows"].size(), 2u);  // layer 2, head 1, the last 2 tokens
    for (const auto& row : flash["rows"]) {
        EXPECT_EQ(row["layer"], 2);
        EXPECT_EQ(row["head"], 1);
        const std::vector<double> w = row["weights"];
        EXPECT_EQ(int64_t(w.size()), int64_t(row["query_pos"]) + 1);
        EXPECT_NEAR(std::accumulate(w.begin(), w.end(), 0.0), 1.0, 1e-5);
    }
    for (size_t h = 0; h < 9; ++h) {  // layer 0: the same inputs with either implementation
        const auto& a = flash["layers"][0]["heads"][h];
        const auto& b = standard["layers"][0]["heads"][h];
        EXPECT_NEAR(double(a["entropy"]), double(b["entropy"]), 1e-4);
        EXPECT_NEAR(double(a["sink_mass"]), double(b["sink_mass"]), 1e-5);
    }
}

}  // namespace
}  // namespace fluoro
