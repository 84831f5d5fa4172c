// `fluoro run --kv-policy` end to end on SmolLM2: with a 64-token context a 100-token answer
// stops at the context under the full policy and runs to the end under streaming; a bad policy
// name is refused with the valid ones listed. Skipped when the binary or the model is missing.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "app/cli/fluoro_cli.h"
#include "test_models.h"

namespace fluoro {
namespace {

// The model argument, quoted for the shell (appending: GCC 12 warns falsely on "x" + string).
std::string quoted(const std::filesystem::path& p) {
    std::string q = "'";
    q += p.string();
    q += "' ";
    return q;
}

using test::fluoro_binary;

test::CliResult run(const std::string& args) {
    return test::run_fluoro("run " + args);
}

TEST(CmdRunKvPolicy, StreamingRunsPastTheContextWhereFullStops) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    if (!std::filesystem::exists(fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const std::string base =
        quoted(path) + "'Tell me a long story about a dragon.' -n 100 -c 64 -t 2 --temp 0";
    const test::CliResult full = run(base);
    EXPECT_EQ(full.rc, 0) << full.out;
    EXPECT_NE(full.out.find("stop: context_full"), std::string::npos) << full.out;
    const test::CliResult streaming = run(base + " --kv-policy streaming");
    EXPECT_EQ(streaming.rc, 0) << streaming.out;
    EXPECT_NE(streaming.out.find("decode 100 tok"), std::string::npos) << streaming.out;
    EXPECT_NE(streaming.out.find("stop: max_tokens"), std::string::npos) << streaming.out;
}

TEST(CmdRunKvPolicy, BadNamesAndBudgetsAreRefused) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    if (!std::filesystem::exists(fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const std::string base = quoted(path) + "'Hi' -n 4 -c 64 -t 2";
    const test::CliResult bad = run(base + " --kv-policy lru");
    EXPECT_NE(bad.rc, 0);
    EXPECT_NE(bad.out.find("--kv-policy must be full, window, streaming"), std::string::npos)
        << bad.out;
    const test::CliResult big = run(base + " --kv-policy window --kv-budget 100000");
    EXPECT_NE(big.rc, 0) << big.out;
    EXPECT_NE(big.out.find("exceeds the context"), std::string::npos) << big.out;
}

}  // namespace
}  // namespace fluoro
