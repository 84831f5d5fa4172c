// `fluoro lens`: on SmolLM2 the last layer's top token is the model's own next-token prediction
// (target rank 0 there), the JSON has one entry per layer, and bad positions are refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "app/cli/fluoro_cli.h"
#include "test_models.h"

namespace fluoro {
namespace {

TEST(CmdLens, EveryLayerAndTheLastIsTheModelsPrediction) {
    if (!std::filesystem::exists(test::fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    const std::string model = test::quoted(path.string());
    const test::CliResult r = test::run_fluoro(
        "lens " + model + " -p " + test::quoted("The capital of France is") + " -t 2 --json");
    ASSERT_EQ(r.rc, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    ASSERT_EQ(j["layers"].size(), 30u);
    EXPECT_EQ(j["target_is"], "the model's output");
    const auto& last = j["layers"].back();
    EXPECT_EQ(last["target_rank"], 0);
    EXPECT_EQ(last["top"][0]["piece"], j["target"]);
    EXPECT_EQ(last["top"].size(), 5u);
    // A position inside the prompt: the target is the next prompt token.
    const test::CliResult in = test::run_fluoro(
        "lens " + model + " -p " + test::quoted("The capital of France is") + " --at 1 -t 2");
    ASSERT_EQ(in.rc, 0) << in.out;
    EXPECT_NE(in.out.find("(the next prompt token)"), std::string::npos) << in.out;
    EXPECT_NE(in.out.find("| 30 |"), std::string::npos) << in.out;

    const test::CliResult past = test::run_fluoro("lens " + model + " -p hi --at 99 -t 1");
    EXPECT_NE(past.rc, 0);
    EXPECT_NE(past.out.find("--at 99 is past the prompt's"), std::string::npos) << past.out;
}

}  // namespace
}  // namespace fluoro
