// The window's measurements (app/measure/measurement.h) on SmolLM2: each runs what the CLI runs
// and returns its JSON, stops when cancelled, refuses bad parameters before loading anything, and
// measure_view draws exactly the numbers the result holds.
#include "measure/measurement.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/error.h"
#include "eval/perplexity.h"
#include "measure/measure_plots.h"
#include "session/loaded_model.h"
#include "test_models.h"
#include "test_temp.h"

namespace fluoro::app {
namespace {

// A text of a few thousand tokens, the same every run.
std::filesystem::path text_file() {
    const auto dir = fluoro::test::unique_temp_path("fluoro_measure_tests");
    std::filesystem::create_directories(dir);
    const auto path = dir / "text.txt";
    std::ofstream out(path);
    for (int i = 0; i < 300; ++i)
        out << "Line " << i << " of the story: the river carried " << (i * 7) % 13
            << " boats past the mill, and the miller counted them twice.\n";
    return path;
}

TEST(Measurement, PerplexityIsTheEnginesAndItsPlotHoldsEveryChunk) {
    FLUORO_REQUIRE_MODEL(model, fluoro::test::kSmolLM2File);
    const auto text = text_file();
    std::vector<double> fractions;
    MeasureControl control;
    control.progress = [&](const std::string&, double f) { fractions.push_back(f); };
    const nlohmann::json j = run_measurement(
        {MeasureKind::Perplexity,
         model,
         {{"file", text.string()}, {"ctx", "64"}, {"max-tokens", "512"}, {"threads", "1"}}},
        control);
    EXPECT_EQ(j["kind"], "ppl");
    EXPECT_EQ(j["threads"], 1);
    EXPECT_EQ(j["params"]["ctx"], "64");
    EXPECT_EQ(j["params"]["chunks"], "0");  // the default filled in
    const nlohmann::json& r = j["result"];
    EXPECT_EQ(r["chunks"], 8);              // 512 tokens in chunks of 64
    EXPECT_EQ(r["scored_tokens"], 8 * 31);  // the second half of each chunk but its last token

    // The same call the CLI makes, on the same thread count: the same arithmetic in the same
    // order, so the same double.
    EngineSettings s;
    s.threads = 1;
    s.ctx = 64;
    s.batch = 64;
    s.logit_rows = 64;
    LoadedModel m = load_model(model, s);
    std::ifstream in(text);
    std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<int32_t> tokens = m.model->tokenizer().encode(body, false, false);
    tokens.resize(512);
    PerplexityOptions opt;
    opt.n_ctx = 64;
    const PerplexityResult direct = perplexity(*m.model, *m.kv, tokens, opt);
    EXPECT_EQ(r["ppl"].get<double>(), direct.ppl);

    // Progress: once while loading (unknown), then from 0 up to 1 after the last chunk.
    ASSERT_GE(fractions.size(), 3u);
    EXPECT_EQ(fractions.front(), -1);
    EXPECT_EQ(fractions.back(), 1.0);
    for (size_t i = 2; i < fractions.size(); ++i) EXPECT_GE(fractions[i], fractions[i - 1]);

    const MeasureView v = measure_view(j);
    ASSERT_EQ(v.plots.size(), 1u);
    ASSERT_EQ(v.plots[0].series.size(), 1u);
    const auto& pts = v.plots[0].series[0].points;
    ASSERT_EQ(pts.size(), 8u);
    EXPECT_EQ(pts.back().first, 8.0);
    EXPECT_EQ(pts.back().second, direct.ppl);  // the running value after the last chunk is it
    EXPECT_EQ(v.table.rows.size(), 8u);
    EXPECT_NE(v.headline.find("over 248 scored tokens in 8 chunks of 64"), std::string::npos)
        << v.headline;
}

TEST(Measurement, StopsWhenCancelled) {
    FLUORO_REQUIRE_MODEL(model, fluoro::test::kSmolLM2File);
    std::atomic<bool> cancel{false};
    int after = 0;
    MeasureControl control;
    control.cancel = &cancel;
    control.progress = [&](const std::string&, double f) {
        if (cancel) ++after;
        if (f >= 0) cancel = true;  // the first chunk is about to start
    };
    EXPECT_THROW(
        run_measurement(
            {MeasureKind::Perplexity, model, {{"file", text_file().string()}, {"ctx", "64"}}},
            control),
        MeasureCancelled);
    EXPECT_EQ(after, 0);  // nothing reported once cancelled
}

// Parameters are checked before the model is read: a model path that does not exist is never
// reached.
TEST(Measurement, RefusesBadParametersNamingThem) {
    const std::filesystem::path nowhere = "/nonexistent/model.gguf";
    auto error_of = [&](MeasureKind k, MeasureValues v) -> std::string {
        try {
            run_measurement({k, nowhere, std::move(v)});
        } catch (const Error& e) {
            return e.what();
        }
        return "";
    };
    EXPECT_NE(
        error_of(MeasureKind::Perplexity, {{"context", "64"}}).find("unknown parameter 'context'"),
        std::string::npos);
    EXPECT_NE(error_of(MeasureKind::Perplexity, {{"ctx", "sixty"}}).find("parameter 'ctx'"),
              std::string::npos);
    EXPECT_NE(error_of(MeasureKind::KvEval, {{"policies", "full,lru"}}).find("unknown name 'lru'"),
              std::string::npos);
    EXPECT_NE(error_of(MeasureKind::KvEval, {{"budgets", "0%"}}).find("--budgets"),
              std::string::npos);
    EXPECT_NE(error_of(MeasureKind::SpecBench, {{"drafter", ""}}).find("'drafter' is empty"),
              std::string::npos);
    EXPECT_NE(error_of(MeasureKind::SpecBench, {{"n-gen", "0"}}).find("parameter 'n-gen'"),
              std::string::npos);
    EXPECT_NE(error_of(MeasureKind::AttnEval, {{"mqa", "maybe"}}).find("parameter 'mqa'"),
              std::string::npos);
    EXPECT_NE(error_of(MeasureKind::AttnEval, {{"variants", "a=x.gguf,b"}})
                  .find("parameter 'variants' 'b': expected NAME=FILE"),
              std::string::npos);
    EXPECT_NE(error_of(MeasureKind::AttnEval, {{"kv-types", "f16,q5_1"}}).find("'q5_1'"),
              std::string::npos);
}

// An evicting policy at a 100% budget keeps everything, so its perplexity is full's (kv_eval.h);
// at 50% it evicts. The plot's x is the share of the text kept.
TEST(Measurement, KvEvalRunsTheGridAndPlotsPerplexityAgainstTheBudget) {
    FLUORO_REQUIRE_MODEL(model, fluoro::test::kSmolLM2File);
    const nlohmann::json j = run_measurement({MeasureKind::KvEval,
                                              model,
                                              {{"text", text_file().string()},
                                               {"policies", "full,window"},
                                               {"budgets", "100%,50%"},
                                               {"tasks", "ppl"},
                                               {"ppl-tokens", "128"},
                                               {"bucket", "32"},
                                               {"threads", "1"}}});
    const auto& cells = j["result"]["cells"];
    ASSERT_EQ(cells.size(), 3u);  // full once, window at both budgets
    EXPECT_EQ(cells[0]["policy"], "full");
    EXPECT_EQ(cells[1]["ppl"]["ppl"], cells[0]["ppl"]["ppl"]);
    EXPECT_GT(cells[2]["ppl"]["evicted_tokens"].get<int64_t>(), 0);
    const MeasureView v = measure_view(j);
    ASSERT_FALSE(v.plots.empty());
    const MeasurePlot& p = v.plots[0];
    EXPECT_EQ(p.title, "Perplexity vs KV budget");
    ASSERT_EQ(p.series.size(), 2u);  // full, window
    // full keeps everything: one measurement drawn as a level line over the budgets run.
    EXPECT_EQ(p.series[0].name, "full (keeps all)");
    ASSERT_EQ(p.series[0].points.size(), 2u);
    EXPECT_EQ(p.series[0].points[0], std::make_pair(50.0, cells[0]["ppl"]["ppl"].get<double>()));
    EXPECT_EQ(p.series[0].points[1], std::make_pair(100.0, cells[0]["ppl"]["ppl"].get<double>()));
    EXPECT_EQ(p.series[1].name, "window");
    ASSERT_EQ(p.series[1].points.size(), 2u);
    EXPECT_EQ(p.series[1].points[0].first, 50.0);  // 64 of 128 tokens, sorted by budget
    EXPECT_EQ(p.series[1].points[0].second, cells[2]["ppl"]["ppl"].get<double>());
    EXPECT_EQ(p.series[1].points[1].first, 100.0);
    EXPECT_EQ(v.table.rows.size(), 3u);
    EXPECT_EQ(v.table.rows[1][4], "+0.0%");  // window at 100% against full
    // NLL over position: one series per cell, one point per 32-token bucket.
    EXPECT_EQ(v.plots.back().title, "NLL over position");
    EXPECT_EQ(v.plots.back().series.size(), 3u);
    EXPECT_EQ(v.plots.back().series[0].points.size(), 4u);
}

// SmolLM2 (30 layers, 9 query heads over 3 KV heads of 64 dims) and its KV heads merged into one:
// the cache's bytes per token are 30 x 3 x (64 + 64) values at 2 bytes (f16: 23040, the 22.5 KiB
// of docs/CLAIMS.md) or at 34 bytes per 32 (q8_0: 12240), a third of that with one KV head; the
// plot puts each variant's change in mean NLL (log of the perplexity ratio) at those bytes.
TEST(Measurement, AttnEvalMeasuresTheModelAndItsMqaMergeAtEachKvType) {
    FLUORO_REQUIRE_MODEL(model, fluoro::test::kSmolLM2File);
    const nlohmann::json j = run_measurement({MeasureKind::AttnEval,
                                              model,
                                              {{"text", text_file().string()},
                                               {"kv-types", "f16,q8_0"},
                                               {"tasks", "ppl"},
                                               {"ppl-tokens", "128"},
                                               {"threads", "1"}}});
    EXPECT_EQ(j["kind"], "eval_attn");
    const auto& vs = j["result"]["variants"];
    ASSERT_EQ(vs.size(), 3u);  // the file, its mean and its aligned MQA merges
    EXPECT_EQ(vs[0]["attention"], "GQA");
    EXPECT_EQ(vs[0]["query_heads_per_kv_head"], 3.0);
    EXPECT_EQ(vs[0]["kv_bytes_per_token"]["f16"], 23040);
    EXPECT_EQ(vs[0]["kv_bytes_per_token"]["q8_0"], 12240);
    EXPECT_EQ(vs[1]["name"], "mqa-mean");
    EXPECT_EQ(vs[1]["attention"], "MQA");
    EXPECT_EQ(vs[1]["kv_bytes_per_token"]["f16"], 7680);
    EXPECT_EQ(vs[1]["kv_bytes_per_token"]["q8_0"], 4080);
    EXPECT_EQ(vs[2]["name"], "mqa-aligned");
    EXPECT_EQ(vs[2]["kv_bytes_per_token"], vs[1]["kv_bytes_per_token"]);
    const double base = vs[0]["cells"][0]["ppl"]["ppl"].get<double>();
    const double mqa = vs[1]["cells"][0]["ppl"]["ppl"].get<double>();
    EXPECT_GT(mqa, base);  // nothing fine-tuned: merging two thirds of the KV heads away hurts
    const MeasureView v = measure_view(j);
    ASSERT_EQ(v.plots.size(), 1u);  // ppl only: no passkey plot
    const MeasurePlot& p = v.plots[0];
    EXPECT_EQ(p.title, "Mean NLL change vs KV bytes per token");
    ASSERT_EQ(p.series.size(), 3u);
    EXPECT_EQ(p.series[0].name, "original");
    ASSERT_EQ(p.series[0].points.size(), 2u);
    EXPECT_EQ(p.series[0].points[1], std::make_pair(23040.0, 0.0));  // sorted by bytes
    EXPECT_EQ(p.series[1].points[1].first, 7680.0);
    EXPECT_DOUBLE_EQ(p.series[1].points[1].second, std::log(mqa / base));
    ASSERT_EQ(v.table.rows.size(), 6u);
    EXPECT_EQ(v.table.rows[0][1], "GQA 3:1");
    EXPECT_EQ(v.table.rows[0][6], "+0.0%");
    EXPECT_EQ(v.table.rows[2][1], "MQA 9:1");
    EXPECT_EQ(v.table.rows[2][4], "0.333x");
    EXPECT_NE(v.notes.at(0).find("Training-free"), std::string::npos);
    // The form's 1024 calibration tokens, after the 128 perplexity reads.
    EXPECT_EQ(j["result"]["calibration"]["skip"], 128);
    EXPECT_EQ(j["result"]["calibration"]["tokens"], 1024);
    EXPECT_NE(v.notes.at(1).find("fitted to the keys and values on 1024 tokens"), std::string::npos)
        << v.notes.at(1);
}

TEST(Measurement, SpecBenchPlotsAcceptanceByPositionAndSpeedupPerSet) {
    FLUORO_REQUIRE_MODEL(model, fluoro::test::kSmolLM2File);
    const nlohmann::json j = run_measurement(
        {MeasureKind::SpecBench, model, {{"category", "copy"}, {"n-gen", "24"}, {"threads", "1"}}});
    const auto& rows = j["result"]["rows"];
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0]["drafter"], "prompt_lookup");
    const MeasureView v = measure_view(j);
    ASSERT_EQ(v.plots.size(), 2u);
    const auto& by_pos = rows[0]["acceptance_by_position"];
    ASSERT_EQ(v.plots[0].series.size(), 1u);
    ASSERT_EQ(v.plots[0].series[0].points.size(), by_pos.size());
    for (size_t i = 0; i < by_pos.size(); ++i)
        EXPECT_EQ(v.plots[0].series[0].points[i].second, by_pos[i].get<double>());
    EXPECT_EQ(v.plots[1].categories, std::vector<std::string>{"copy"});
    EXPECT_EQ(v.plots[1].series[0].points[0].second, rows[0]["speedup"].get<double>());
}

// A stored result edited by hand or by another version: an error naming the field, no crash.
TEST(Measurement, ViewOfABrokenResultNamesTheField) {
    EXPECT_THROW(measure_view(nlohmann::json::object()), Error);
    try {
        measure_view({{"kind", "ppl"}, {"result", {{"ppl", 3.0}}}});
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'scored_tokens' missing"), std::string::npos);
    }
    EXPECT_THROW(measure_view({{"kind", "eval_kv"}, {"result", {{"cells", 3}}}}), Error);
    EXPECT_THROW(measure_view({{"kind", "weather"}, {"result", {}}}), Error);
}

}  // namespace
}  // namespace fluoro::app
