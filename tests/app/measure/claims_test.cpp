// The textbook claims (app/measure/claims.h): the verdict rules at their thresholds, and a run on
// SmolLM2 whose numbers are the reference page's (22.5 KiB of f16 KV per token: 2 × 30 layers ×
// 3 KV heads × 64 × 2 bytes) and whose view draws what the result holds.
#include "measure/claims.h"

#include <cmath>

#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "gguf/test_model.h"
#include "measure/claim_attention.h"
#include "measure/claim_prefix.h"
#include "measure/measure_plots.h"
#include "measure/measurement.h"
#include "model/model.h"
#include "test_models.h"
#include "test_temp.h"

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
    const nlohmann::json j = run_measurement({MeasureKind::Claims,
                                              model,
                                              {{"only", "kv_scaling,kv_memory,verify_cost"},
                                               {"positions", "16,32,64"},
                                               {"reps", "1"},
                                               {"draft-max", "3"},
                                               {"threads", "1"}}});
    const auto& claims = j["result"]["claims"];
    ASSERT_EQ(claims.size(), 3u);
    EXPECT_EQ(claims[0]["name"], "kv_scaling");
    EXPECT_EQ(claims[0]["data"]["max_logit_diff"], 0.0);  // batch-invariant kernels
    EXPECT_EQ(claims[1]["name"], "kv_memory");
    EXPECT_EQ(claims[1]["verdict"], "reproduced");
    int f16_rows = 0;
    for (const auto& row : claims[1]["data"]["rows"]) {
        if (row["kv_type"] != "f16") continue;
        EXPECT_EQ(row["formula_per_token"], 23040);
        ++f16_rows;
    }
    EXPECT_EQ(f16_rows, 1);
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

// The attention claims and the prefix claim on tiny random models (their numbers mean nothing;
// the mechanics do): a Gemma 3-shaped model with 5 local layers of a 16-token window and one
// global layer — the local layers never attend past the window (the mask), the receptive field
// grows by 15 per local layer and is everything after the global one; accumulated attention
// shares are shares; StreamingLLM at a budget past the window keeps perplexity finite and the
// recompute baseline is timed; the prefix claim reuses exactly the tokens before a change.
TEST(Claims, MechanicsOnATinyGemma3) {
    gguf::TestModelSpec spec;
    spec.arch = "gemma3";
    spec.n_layer = 6;
    spec.sliding_window = 16;
    spec.n_ctx = 512;
    const auto path = fluoro::test::unique_temp_path("claims_tiny_gemma3.gguf");
    gguf::write_test_model(path, spec);
    cpu::CpuBackend backend(1);
    const auto model = Model::load(path, backend, ModelLoadOptions{64, 64});
    for (int l = 0; l < 5; ++l) EXPECT_EQ(model->layer_window(l), 16) << l;
    EXPECT_EQ(model->layer_window(5), 0);

    ClaimsOptions opt;
    opt.only = {"sliding_window", "sinks", "heavy_hitters", "prefix_cache"};
    opt.attention_tokens = 96;
    opt.sink_budget = 24;
    opt.prefix_tokens = 64;
    opt.reps = 1;
    const nlohmann::json r = run_claims(*model, opt);
    const auto& claims = r["claims"];
    ASSERT_EQ(claims.size(), 4u);
    const auto& sw = claims[0];
    EXPECT_EQ(sw["name"], "sliding_window");
    const auto& layers = sw["data"]["layers"];
    ASSERT_EQ(layers.size(), 6u);
    for (int l = 0; l < 5; ++l) {
        EXPECT_EQ(layers[size_t(l)]["mass_beyond_window"], 0.0) << l;  // masked, exactly
        EXPECT_EQ(layers[size_t(l)]["receptive_field"], 1 + 15 * (l + 1)) << l;
    }
    EXPECT_EQ(layers[5]["receptive_field"], 96);
    EXPECT_GT(layers[5]["mass_beyond_window"].get<double>(), 0.0);  // the global layer reaches back

    const auto& sinks = claims[1];
    EXPECT_EQ(sinks["name"], "sinks");
    EXPECT_EQ(sinks["data"]["layers_masked"],
              3);  // local layers 2, 3, 4: their window ends after token 3
    for (const char* k : {"ppl_full", "ppl_window", "ppl_streaming"})
        EXPECT_TRUE(std::isfinite(sinks["data"][k].get<double>()) && sinks["data"][k] > 1.0) << k;
    EXPECT_GT(sinks["data"]["recompute_window_ms"].get<double>(), 0.0);

    const auto& heavy = claims[2];
    for (const auto& l : heavy["data"]["layers"]) {
        const double t10 = l["top10_share"], t20 = l["top20_share"];
        EXPECT_GE(t10, 0.1 - 1e-9);  // the largest tenth holds at least a tenth
        EXPECT_GE(t20, t10);
        EXPECT_LE(t20, 1.0 + 1e-9);
    }

    const auto& prefix = claims[3];
    EXPECT_EQ(prefix["data"]["changed_early"]["reused"],
              prefix["data"]["changed_early"]["position"]);
    EXPECT_EQ(prefix["data"]["changed_late"]["reused"], prefix["data"]["changed_late"]["position"]);
    for (const auto& p : prefix["data"]["points"]) EXPECT_EQ(p["reused"], p["cached"]);
    const MeasureView v = measure_view({{"kind", "claims"}, {"result", r}});
    EXPECT_EQ(v.table.rows.size(), 4u);
    EXPECT_EQ(v.plots.size(), 5u);  // receptive field, past the window, sinks, heavy, TTFT
}

TEST(Claims, TopShareIsTheLargestFractionsShare) {
    EXPECT_DOUBLE_EQ(top_share({1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0.2), 0.2);
    EXPECT_DOUBLE_EQ(top_share({9, 1, 0, 0, 0, 0, 0, 0, 0, 0}, 0.1), 0.9);
    EXPECT_DOUBLE_EQ(top_share({5}, 0.1), 1.0);  // at least one
    EXPECT_EQ(top_share({}, 0.2), 0.0);
    double slope = 0, intercept = 0;
    EXPECT_NEAR(linear_r2({1, 2, 3, 4}, {3, 5, 7, 9}, &slope, &intercept), 1.0, 1e-12);
    EXPECT_NEAR(slope, 2.0, 1e-12);
    EXPECT_NEAR(intercept, 1.0, 1e-12);
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
