// `fluoro run --show-experts`: a mixture of experts' load per layer after the answer, counted
// over the prompt's and the answer's tokens (the synthetic qwen3moe file: 3 layers, top-2 of 8);
// a dense model says it has none; --telemetry off contradicts the flag.
#include <gtest/gtest.h>

#include <string>

#include "app/cli/fluoro_cli.h"
#include "test_models.h"

namespace fluoro {
namespace {

std::string fixture(const char* name) {
    return test::quoted((test::fixtures_dir() / name).string());
}

TEST(CmdRunShowExperts, PrintsEachLayersLoadOverEveryToken) {
    if (!std::filesystem::exists(test::fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    // 18 prompt tokens (byte-level: one per byte here) and 8 answer tokens, of which the last
    // needs no forward pass: 25 tokens routed.
    const test::CliResult r = test::run_fluoro("run --raw " + fixture("arch_qwen3moe.gguf") +
                                               test::quoted("the cat sat on the mat") +
                                               " -n 8 -t 1 --temp 0 -q --show-experts");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("experts: 25 tokens, 2 of 8 experts each"), std::string::npos) << r.out;
    for (const char* layer : {"layer   0:", "layer   1:", "layer   2:"})
        EXPECT_NE(r.out.find(layer), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("layer   3:"), std::string::npos) << r.out;
}

TEST(CmdRunShowExperts, ADenseModelHasNoneAndTelemetryOffIsRefused) {
    if (!std::filesystem::exists(test::fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const test::CliResult dense = test::run_fluoro("run --raw " + fixture("arch_qwen3.gguf") +
                                                   " hi -n 2 -t 1 -q --show-experts");
    ASSERT_EQ(dense.rc, 0) << dense.out;
    EXPECT_NE(dense.out.find("experts: none (qwen3 here is not a mixture of experts)"),
              std::string::npos)
        << dense.out;
    const test::CliResult off = test::run_fluoro("run --raw " + fixture("arch_qwen3moe.gguf") +
                                                 " hi -n 2 -t 1 --show-experts --telemetry off");
    EXPECT_NE(off.rc, 0);
    EXPECT_NE(off.out.find("--show-experts reads the run's telemetry"), std::string::npos)
        << off.out;
}

// deepseek2 (the synthetic MLA file: layer 0 a dense FFN, layers 1-2 top-2 of 8 with a shared
// expert): the dense layer says so instead of an empty row. Both attention paths (--mla) answer,
// with the same greedy tokens (the paths agree within 0.018 x RMS logit on this file,
// Mla.NaiveAndAbsorbedAreOneModel, and these 6 steps have no near-tie); an unknown path is refused
// naming the choices.
TEST(CmdRunShowExperts, Deepseek2DenseLayersAndBothMlaPaths) {
    if (!std::filesystem::exists(test::fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    std::string out[2];
    const char* paths[] = {"absorbed", "naive"};
    for (int i = 0; i < 2; ++i) {
        const test::CliResult r = test::run_fluoro(
            "run --raw " + fixture("arch_deepseek2.gguf") + test::quoted("the cat sat") +
            " -n 6 -t 1 --temp 0 -q --show-experts --mla " + paths[i]);
        ASSERT_EQ(r.rc, 0) << r.out;
        EXPECT_NE(r.out.find("layer   0:  dense (no experts)"), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("layer   2: "), std::string::npos) << r.out;
        out[i] = r.out.substr(0, r.out.find("experts:"));
    }
    EXPECT_EQ(out[0], out[1]);
    const test::CliResult bad =
        test::run_fluoro("run --raw " + fixture("arch_deepseek2.gguf") + " hi -n 1 --mla absorbd");
    EXPECT_NE(bad.rc, 0);
    EXPECT_NE(bad.out.find("--mla must be absorbed or naive, not 'absorbd'"), std::string::npos)
        << bad.out;
}

}  // namespace
}  // namespace fluoro
