// KV policies through the Engine, as the GUI and `fluoro run --kv-policy` drive them: a
// conversation runs past its context under an evicting policy where the full policy stops, each
// eviction arrives as a KvEviction event that keeps the sinks, and a scoring policy turns the
// attention statistics on by itself.
#include <gtest/gtest.h>

#include "engine/runtime/engine_test_events.h"
#include "gguf/test_model.h"
#include "runtime/engine.h"
#include "test_temp.h"

namespace fluoro {
namespace {

using test::all_of;
using test::next_run;

std::vector<Event> run_with(const std::optional<KvPolicyConfig>& policy, int64_t max_tokens,
                            SpecMode spec_mode = SpecMode::Off) {
    const auto path = test::unique_temp_path("engine_kv_policy.gguf");
    gguf::TestModelSpec spec;
    spec.n_layer = 2;
    spec.n_ctx = 1024;
    gguf::write_test_model(path, spec);
    Engine engine({TelemetryLevel::Full});
    LoadModel load{path, {}};
    load.settings.threads = 1;
    load.settings.ctx = 64;
    engine.submit_blocking(load);
    SamplingParams p;
    p.temperature = 0;
    ChangeSettings cs{p, max_tokens, std::nullopt};
    cs.kv_policy = policy;
    SpeculativeSettings speculative;
    speculative.mode = spec_mode;
    speculative.exit_layer = 1;
    speculative.draft_p_min = 0;  // a random model's draft is never sure: draft anyway
    cs.speculative = speculative;
    engine.submit(cs);
    engine.submit(SendMessage{"alpha beta gamma delta"});
    return next_run(engine);
}

TEST(EngineKvPolicy, FullPolicyStopsAtTheContext) {
    const auto events = run_with(std::nullopt, 200);
    const auto fin = std::get<RunFinished>(events.back());
    EXPECT_EQ(fin.stop, "context_full");
    EXPECT_TRUE(all_of<KvEviction>(events).empty());
}

TEST(EngineKvPolicy, StreamingRunsPastTheContextAndReportsEachEviction) {
    KvPolicyConfig cfg;
    cfg.kind = KvPolicyKind::Streaming;
    const auto events = run_with(cfg, 200);
    const auto fin = std::get<RunFinished>(events.back());
    EXPECT_EQ(fin.stop, "max_tokens") << fin.error;
    EXPECT_EQ(fin.n_tokens, 200);
    const auto ev = all_of<KvEviction>(events);
    ASSERT_GT(ev.size(), 5u);
    int64_t last_step = -1;
    for (const KvEviction& e : ev) {
        EXPECT_EQ(e.policy, "streaming");
        EXPECT_EQ(e.budget, 64);
        EXPECT_EQ(e.kept.size() + e.evicted.size(), size_t(e.length_before));
        EXPECT_EQ(e.reasons.size(), e.kept.size());
        ASSERT_GE(e.kept.size(), 4u);
        for (int64_t j = 0; j < 4; ++j) {
            EXPECT_EQ(e.kept[size_t(j)], j);
            EXPECT_EQ(e.reasons[size_t(j)], uint8_t(KvKeepReason::Sink));
        }
        EXPECT_GE(e.step, last_step);
        last_step = e.step;
    }
}

// Speculative verification appends several tokens at once and rolls back the rejected ones; the
// policy makes room for the whole draft first, and the draft's own cache follows the target.
TEST(EngineKvPolicy, SpeculativeDecodingRunsPastTheContext) {
    KvPolicyConfig cfg;
    cfg.kind = KvPolicyKind::Streaming;
    for (SpecMode mode : {SpecMode::PromptLookup, SpecMode::SelfSpeculative}) {
        const auto events = run_with(cfg, 200, mode);
        const auto fin = std::get<RunFinished>(events.back());
        EXPECT_EQ(fin.stop, "max_tokens") << spec_mode_name(mode) << ": " << fin.error;
        EXPECT_EQ(fin.n_tokens, 200);
        EXPECT_FALSE(all_of<KvEviction>(events).empty());
        if (mode == SpecMode::SelfSpeculative) {
            EXPECT_GT(fin.drafted_tokens, 0);
        }
    }
}

TEST(EngineKvPolicy, ScoringPolicyTurnsTheStatisticsOn) {
    KvPolicyConfig cfg;
    cfg.kind = KvPolicyKind::H2O;
    const auto events = run_with(cfg, 120);
    const auto fin = std::get<RunFinished>(events.back());
    EXPECT_EQ(fin.stop, "max_tokens") << fin.error;
    EXPECT_FALSE(all_of<AttentionStats>(events).empty());
    bool heavy = false;
    for (const KvEviction& e : all_of<KvEviction>(events))
        for (uint8_t r : e.reasons) heavy |= r == uint8_t(KvKeepReason::Heavy);
    EXPECT_TRUE(heavy);
}

TEST(EngineKvPolicy, ABadPolicyIsRefusedWithTheReason) {
    KvPolicyConfig cfg;
    cfg.kind = KvPolicyKind::Window;
    cfg.budget = 4096;  // past the 64-token context
    const auto events = run_with(cfg, 10);
    bool named = false;
    for (const auto& e : events)
        if (const auto* err = std::get_if<ErrorEvent>(&e))
            named |= std::string(err->message).find("exceeds the context") != std::string::npos;
    // The settings error arrives before the run; the run itself goes on under the old policy.
    EXPECT_TRUE(named);
    EXPECT_EQ(std::get<RunFinished>(events.back()).stop, "max_tokens");
}

// A policy kept from another model or context (the window's saved settings) must not block a
// load: the engine says why and goes back to the full policy.
TEST(EngineKvPolicy, APolicyThatDoesNotFitFallsBackToFullAtLoad) {
    const auto path = test::unique_temp_path("engine_kv_policy_load.gguf");
    gguf::write_test_model(path, gguf::TestModelSpec{});
    Engine engine({TelemetryLevel::Full});
    ChangeSettings cs;
    KvPolicyConfig cfg;
    cfg.kind = KvPolicyKind::Streaming;
    cfg.budget = 4096;
    cs.kv_policy = cfg;
    engine.submit(cs);
    LoadModel load{path, {}};
    load.settings.threads = 1;
    load.settings.ctx = 64;
    EXPECT_NO_THROW(engine.submit_blocking(load));
    bool loaded = false, said = false;
    for (const auto& e : engine.events().drain()) {
        loaded |= std::holds_alternative<ModelLoaded>(e);
        if (const auto* err = std::get_if<ErrorEvent>(&e))
            said |= err->message.find("back to full") != std::string::npos;
    }
    EXPECT_TRUE(loaded);
    EXPECT_TRUE(said);
}

}  // namespace
}  // namespace fluoro
