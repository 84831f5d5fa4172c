// `fluoro lens`: on SmolLM2 the last layer's top token is the model's own next-token prediction
// (target rank 0 there), the JSON has one entry per layer, --overview names all 270 heads, and bad
// positions are refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
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

    // --overview: every layer x head's pattern, named by one of the seven labels.
    const test::CliResult ov =
        test::run_fluoro("lens " + model + " -p " + test::quoted("red fox blue cat red fox blue") +
                         " -t 2 --overview --json");
    ASSERT_EQ(ov.rc, 0) << ov.out;
    const auto jo = nlohmann::json::parse(ov.out.substr(ov.out.find('{')));
    ASSERT_EQ(jo["overview"]["heads"].size(), 30u * 9u);
    const std::set<std::string> labels{"induction", "previous", "self", "sink",
                                       "local",     "diffuse",  "mixed"};
    for (const auto& h : jo["overview"]["heads"])
        EXPECT_TRUE(labels.count(h["label"].get<std::string>())) << h.dump();
    EXPECT_GT(jo["overview"]["ms"].get<double>(), 0.0);

    const test::CliResult past = test::run_fluoro("lens " + model + " -p hi --at 99 -t 1");
    EXPECT_NE(past.rc, 0);
    EXPECT_NE(past.out.find("--at 99 is past the prompt's"), std::string::npos) << past.out;
}

}  // namespace
}  // namespace fluoro
