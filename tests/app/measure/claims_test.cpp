// The textbook claims (app/measure/claims.h): the verdict rules at their thresholds, and a run on
// SmolLM2 whose numbers are the reference page's (22.5 KiB of f16 KV per token: 2 × 30 layers ×
// 3 KV heads × 64 × 2 bytes) and whose view draws what the result holds.
#include "measure/claims.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "measure/measure_plots.h"
#include "measure/measurement.h"
#include "test_models.h"

namespace fluoro::app {
namespace {

TEST(Claims, VerdictRulesAtTheirThresholds) {
    // Exponents 0 (cached) and 1 (recomputed) in theory; 0.5 apart and the recomputed one at
    // least 0.5 is the rule.
    EXPECT_EQ(kv_scaling_verdict(0.1, 1.0, 0)["verdict"], "reproduced");
    EXPECT_EQ(kv_scaling_verdict(0.5, 0.9, 0)["verdict"], "not reproduced");
    EXPECT_EQ(kv_scaling_verdict(0.0, 0.4, 0)["verdict"], "not reproduced");
    EXPECT_NE(kv_scaling_verdict(0.2, 1.1, 0)["why"].get<std::string>().find("~N^2.10"),
              std::string::npos);
    EXPECT_EQ(verify_cost_verdict({1.0, 1.1, 1.5})["verdict"], "reproduced");
    EXPECT_EQ(verify_cost_verdict({1.0, 1.3, 1.6})["verdict"],
              "depends on hardware: not on this one");
    EXPECT_EQ(verify_cost_verdict({1.0})["verdict"], "not measured");
}

TEST(Claims, OnSmolLM2TheMemoryIsTheFormulasAndTheViewDrawsTheResult) {
    FLUORO_REQUIRE_MODEL(model, fluoro::test::kSmolLM2File);
    const nlohmann::json j = run_measurement(
        {MeasureKind::Claims,
         model,
         {{"positions", "16,32,64"}, {"reps", "1"}, {"draft-max", "3"}, {"threads", "1"}}});
    const auto& claims = j["result"]["claims"];
    ASSERT_EQ(claims.size(), 3u);
    EXPECT_EQ(claims[0]["name"], "kv_scaling");
    EXPECT_EQ(claims[0]["data"]["max_logit_diff"], 0.0);  // batch-invariant kernels
    EXPECT_EQ(claims[1]["name"], "kv_memory");
    EXPECT_EQ(claims[1]["verdict"], "reproduced");
    for (const auto& row : claims[1]["data"]["rows"])
        if (row["kv_type"] == "f16") EXPECT_EQ(row["formula_per_token"], 23040);
    EXPECT_EQ(claims[2]["name"], "verify_cost");
    ASSERT_EQ(claims[2]["data"]["v"].size(), 4u);  // k = 0..3
    EXPECT_EQ(claims[2]["data"]["v"][0], 1.0);     // v(0) is the unit

    const MeasureView v = measure_view(j);
    ASSERT_EQ(v.plots.size(), 2u);
    ASSERT_EQ(v.plots[0].series.size(), 2u);
    ASSERT_EQ(v.plots[0].series[0].points.size(), 3u);
    EXPECT_EQ(v.plots[0].series[0].points[2].second,
              claims[0]["data"]["points"][2]["recompute_ms"].get<double>());
    EXPECT_EQ(v.table.rows.size(), 3u);
    EXPECT_EQ(v.table.rows[1][1], "reproduced");
    EXPECT_NE(v.headline.find("of 3 claims reproduced"), std::string::npos);
}

TEST(Claims, AnUnknownClaimIsNamed) {
    try {
        run_measurement({MeasureKind::Claims, "/nonexistent.gguf", {{"only", "flash"}}});
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("unknown claim 'flash'"), std::string::npos);
    }
}

}  // namespace
}  // namespace fluoro::app
