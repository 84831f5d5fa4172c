// `fluoro bench spec MODEL --json` end to end on SmolLM2 (the built binary next to this test's
// folder), small: the copy prompts, 16 tokens, prompt lookup and the draft-model drafter with the
// model as its own draft. Checks the report's shape and its arithmetic (tau = tokens / forwards,
// acceptance = accepted / drafted, the self-draft accepts everything, the per-prompt rows add up
// to their category's), not speed. Also: the user's own prompts (--prompts FILE) replace the
// built-in sets, and an unknown drafter or a malformed prompts file is refused by name.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_models.h"
#include "test_temp.h"

namespace fluoro {
namespace {

std::filesystem::path fluoro_binary() {
    const auto self = std::filesystem::read_symlink("/proc/self/exe");
    return self.parent_path().parent_path() / "app" / "fluoro";
}

std::string run(const std::string& cmd, int* status) {
    FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
    if (!pipe) return {};
    std::string out;
    char buf[4096];
    while (const size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
    *status = pclose(pipe);
    return out;
}

TEST(CmdBenchSpec, ReportsAcceptanceTauAndSpeedupPerDrafter) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    if (!std::filesystem::exists(fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    int status = 0;
    const std::string out = run(fluoro_binary().string() + " bench spec '" + path.string() +
                                    "' -n 16 -r 1 -t 2 --category copy --draft-max 4 "
                                    "--drafter prompt_lookup,draft_model --draft-model '" +
                                    path.string() + "' --json",
                                &status);
    ASSERT_EQ(status, 0) << out;
    const auto j = nlohmann::json::parse(out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << out;
    ASSERT_EQ(j["verify_cost"].size(), 5u);  // k = 0..4
    EXPECT_DOUBLE_EQ(j["verify_cost"][0].get<double>(), 1.0);
    // In the loop: a cost per draft length some step used (null for the others), and the steps.
    ASSERT_EQ(j["verify_cost_in_loop"].size(), 5u);
    ASSERT_EQ(j["verify_steps_in_loop"].size(), 5u);
    double steps = 0;
    for (size_t k = 0; k < 5; ++k) {
        const double n = j["verify_steps_in_loop"][k];
        steps += n;
        EXPECT_EQ(j["verify_cost_in_loop"][k].is_null(), n == 0) << k;
        if (n > 0) EXPECT_GT(j["verify_cost_in_loop"][k].get<double>(), 0) << k;
    }
    ASSERT_EQ(j["rows"].size(), 2u);
    double forwards_all = 0;
    for (const auto& r : j["rows"]) forwards_all += r["target_forwards"].get<double>();
    EXPECT_EQ(steps, forwards_all);  // every verification step counted once
    for (const auto& r : j["rows"]) {
        EXPECT_EQ(r["category"], "copy");
        const double tokens = r["tokens"], forwards = r["target_forwards"];
        const double drafted = r["drafted"], accepted = r["accepted"];
        ASSERT_GT(tokens, 0);
        ASSERT_GT(forwards, 0);
        EXPECT_NEAR(r["mean_tokens_per_forward"].get<double>(), tokens / forwards, 1e-9);
        if (drafted > 0) {
            EXPECT_NEAR(r["acceptance_rate"].get<double>(), accepted / drafted, 1e-9);
        }
        EXPECT_GT(r["plain_tps"].get<double>(), 0);
        EXPECT_GT(r["spec_tps"].get<double>(), 0);
        EXPECT_GE(r["copied_fraction"].get<double>(), 0);
        EXPECT_LE(r["copied_fraction"].get<double>(), 1);
    }
    // One row per prompt and drafter; their counts add up to their category's.
    ASSERT_EQ(j["prompts"].size(), 6u);  // three copy prompts, two drafters
    for (const auto& row : j["rows"]) {
        for (const char* key : {"tokens", "drafted", "accepted", "target_forwards"}) {
            double sum = 0;
            for (const auto& p : j["prompts"])
                if (p["drafter"] == row["drafter"]) sum += p[key].get<double>();
            EXPECT_EQ(sum, row[key].get<double>()) << row["drafter"] << " " << key;
        }
    }
    // Copy prompts carry how much a correct answer copies (spec_bench_prompts.h's criterion).
    for (const auto& p : j["prompts"])
        EXPECT_GE(p["reference_copied_fraction"].get<double>(), 0.8) << p.dump();
    const auto& self_draft = j["rows"][1];
    EXPECT_EQ(self_draft["drafter"], "draft_model");
    EXPECT_GT(self_draft["drafted"].get<double>(), 0);
    EXPECT_EQ(self_draft["accepted"], self_draft["drafted"]) << "the model drafting for itself";
}

TEST(CmdBenchSpec, RunsTheUsersOwnPrompts) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    if (!std::filesystem::exists(fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const auto prompts = test::unique_temp_path("my_prompts.jsonl");
    {
        std::ofstream f(prompts);
        f << "# two sets of mine\n"
          << R"({"category": "edit", "text": "Repeat exactly: the red fox ran home.", )"
          << R"("reference": "the red fox ran home."})"
          << "\n"
          << R"({"category": "ask", "text": "Name a colour."})"
          << "\n";
    }
    int status = 0;
    const std::string out =
        run(fluoro_binary().string() + " bench spec '" + path.string() + "' --prompts '" +
                prompts.string() + "' -n 8 -r 1 -t 2 --draft-max 4 --json",
            &status);
    ASSERT_EQ(status, 0) << out;
    const auto j = nlohmann::json::parse(out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << out;
    ASSERT_EQ(j["rows"].size(), 2u);
    EXPECT_EQ(j["rows"][0]["category"], "edit");
    EXPECT_EQ(j["rows"][1]["category"], "ask");
    ASSERT_EQ(j["prompts"].size(), 2u);
    EXPECT_GT(j["prompts"][0]["reference_copied_fraction"].get<double>(), 0);
    EXPECT_TRUE(j["prompts"][1]["reference_copied_fraction"].is_null());

    // A malformed line: the file and line are named, nothing runs.
    {
        std::ofstream f(prompts);
        f << R"({"text": "fine"})"
          << "\n"
          << R"({"text": )"
          << "\n";
    }
    const std::string bad = run(fluoro_binary().string() + " bench spec '" + path.string() +
                                    "' --prompts '" + prompts.string() + "' -n 8",
                                &status);
    EXPECT_NE(status, 0);
    EXPECT_NE(bad.find(prompts.string() + ":2: not valid JSON"), std::string::npos) << bad;
}

TEST(CmdBenchSpec, AnUnknownDrafterIsRefusedByName) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    if (!std::filesystem::exists(fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    int status = 0;
    const std::string out = run(
        fluoro_binary().string() + " bench spec '" + path.string() + "' --drafter medusa", &status);
    EXPECT_NE(status, 0);
    EXPECT_NE(out.find("medusa"), std::string::npos) << out;
}

}  // namespace
}  // namespace fluoro
