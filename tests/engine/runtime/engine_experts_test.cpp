// A mixture-of-experts model's routing reaches the run's events: each StepEvent carries the
// experts its forward passes chose (ExpertRouting), the prefill's equal to what the model chooses
// for the same prompt outside the engine; a dense model's steps carry none. On the synthetic
// qwen3moe fixture (tests/reference/fixtures/arch_qwen3moe.gguf: 3 layers, top-2 of 8).
#include <gtest/gtest.h>

#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "engine/runtime/engine_test_events.h"
#include "model/model.h"
#include "runtime/engine.h"
#include "test_models.h"

namespace fluoro {
namespace {

using test::all_of;
using test::next_run;

std::filesystem::path qwen3moe() {
    return test::fixtures_dir() / "arch_qwen3moe.gguf";
}

std::vector<Event> raw_run(TelemetryLevel level, const std::filesystem::path& model) {
    Engine engine({level});
    LoadModel load{model, {}};
    load.settings.threads = 1;
    load.settings.ctx = 256;
    engine.submit_blocking(load);
    SamplingParams greedy;
    greedy.temperature = 0;
    engine.submit(ChangeSettings{greedy, 6, std::nullopt});
    Complete c{{{"user", "the cat sat on the mat"}}};
    c.raw = true;
    engine.submit(c);
    return next_run(engine);
}

TEST(EngineExperts, EachStepCarriesItsTokensRoutingAndThePrefillsIsTheModels) {
    const auto events = raw_run(TelemetryLevel::Summary, qwen3moe());
    const RunStarted rs = all_of<RunStarted>(events).at(0);
    const auto steps = all_of<StepEvent>(events);
    ASSERT_GE(steps.size(), 2u);
    for (const StepEvent& s : steps) {
        ASSERT_NE(s.experts, nullptr) << "step " << s.index;
        const ExpertRouting& r = *s.experts;
        EXPECT_EQ(r.n_tokens, s.tokens) << "step " << s.index;
        EXPECT_EQ(r.n_layer, 3);
        EXPECT_EQ(r.n_expert, 8);
        ASSERT_EQ(r.n_used, 2);
        ASSERT_EQ(r.experts.size(), size_t(3 * r.n_tokens * 2));
        for (int32_t il = 0; il < r.n_layer; ++il)
            for (int64_t t = 0; t < r.n_tokens; ++t) {
                const int32_t a = r.expert(il, t, 0), b = r.expert(il, t, 1);
                EXPECT_TRUE(a >= 0 && a < 8 && b >= 0 && b < 8 && a != b);
                // qwen3moe renormalises the two weights, the more probable first.
                const size_t at = size_t((il * r.n_tokens + t) * 2);
                EXPECT_NEAR(r.weights[at] + r.weights[at + 1], 1.0f, 1e-5f);
                EXPECT_GE(r.weights[at], r.weights[at + 1]);
            }
    }
    // The prefill's routing is the model's own for the prompt.
    cpu::CpuBackend cpu(1);
    auto model = Model::load(qwen3moe(), cpu);
    auto kv = model->create_kv(256, 1, KvType::F16);
    ExpertChoices direct;
    model->set_expert_sink(&direct);
    const int64_t n = int64_t(rs.prompt_ids.size());
    std::vector<int32_t> pos(static_cast<size_t>(n)), seq(static_cast<size_t>(n), 0);
    for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = int32_t(i);
    const int32_t last[] = {int32_t(n - 1)};
    model->forward(Batch{rs.prompt_ids, pos, seq, last}, *kv);
    const ExpertRouting& prefill = *steps[0].experts;
    ASSERT_EQ(prefill.n_tokens, n);
    for (int32_t il = 0; il < 3; ++il)
        EXPECT_TRUE(std::equal(direct.experts[size_t(il)].begin(), direct.experts[size_t(il)].end(),
                               prefill.experts.begin() + il * n * 2))
            << "layer " << il;
    // A pass that exits early (self-speculative drafting) appends -1 for the layers it skipped.
    direct.clear();
    auto draft_kv = model->create_kv(256, 1, KvType::F16);
    Batch early{rs.prompt_ids, pos, seq, last};
    early.exit_layer = 1;
    model->forward(early, *draft_kv);
    EXPECT_EQ(direct.rows, n);
    EXPECT_TRUE(
        std::equal(direct.experts[0].begin(), direct.experts[0].end(), prefill.experts.begin()));
    for (const int32_t e : direct.experts[2]) EXPECT_EQ(e, -1);
}

TEST(EngineExperts, NoRoutingAtLevelOffNorForADenseModel) {
    EXPECT_TRUE(all_of<StepEvent>(raw_run(TelemetryLevel::Off, qwen3moe())).empty());
    const auto dense = all_of<StepEvent>(
        raw_run(TelemetryLevel::Summary, test::fixtures_dir() / "arch_qwen3.gguf"));
    ASSERT_FALSE(dense.empty());
    for (const StepEvent& s : dense) EXPECT_EQ(s.experts, nullptr);
}

}  // namespace
}  // namespace fluoro
