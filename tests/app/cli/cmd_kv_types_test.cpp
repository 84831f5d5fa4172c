// Separate key and value cache types from the command line: --kv-type sets both, --kv-type-k and
// --kv-type-v override one half, and what ran is reported as "keys/values" (one name when they
// agree). Run end to end through `fluoro attn --json` on SmolLM2 (its JSON names the cache the
// model actually ran with); bad names are refused with the flag and the valid names.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "app/cli/fluoro_cli.h"
#include "test_models.h"

namespace fluoro {
namespace {

std::string attn_kv_type(const std::string& model, const std::string& flags) {
    const test::CliResult r = test::run_fluoro("attn " + test::quoted(model) +
                                               " --prompt 'The sky is' --layer 0 --head 0 --rows 1 "
                                               "--threads 2 --json " +
                                               flags);
    EXPECT_EQ(r.rc, 0) << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    if (j.is_discarded() || !j.contains("kv_type")) return "(no JSON: " + r.out + ")";
    return j["kv_type"];
}

TEST(CmdKvTypes, KeysAndValuesTakeTheirOwnTypes) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    if (!std::filesystem::exists(test::fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const std::string m = path.string();
    EXPECT_EQ(attn_kv_type(m, ""), "f16");
    EXPECT_EQ(attn_kv_type(m, "--kv-type q8_0"), "q8_0");
    EXPECT_EQ(attn_kv_type(m, "--kv-type-k q8_0"), "q8_0/f16");
    EXPECT_EQ(attn_kv_type(m, "--kv-type q4_0 --kv-type-v f32"), "q4_0/f32");
    EXPECT_EQ(attn_kv_type(m, "--kv-type-k q8_0 --kv-type-v q8_0"), "q8_0");
}

TEST(CmdKvTypes, UnknownTypesAreRefusedNamingTheFlag) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    if (!std::filesystem::exists(test::fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const test::CliResult r =
        test::run_fluoro("attn " + test::quoted(path.string()) + " --prompt x --kv-type-v q5_1");
    EXPECT_NE(r.rc, 0);
    EXPECT_NE(r.out.find("--kv-type-v must be f32, f16, q8_0 or q4_0, not 'q5_1'"),
              std::string::npos)
        << r.out;
}

}  // namespace
}  // namespace fluoro
