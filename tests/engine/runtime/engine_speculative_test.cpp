// Speculative decoding through the Engine, as the GUI and `fluoro run --spec` drive it: greedy
// output identical to plain decoding for each drafter, SpecStep events that add up to the run's
// totals, draft/verify steps, a capture that sees only the target's attention, and a bad draft
// model reported as that run's error with the engine still usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/runtime/engine_test_events.h"
#include "gguf/test_model.h"
#include "runtime/engine.h"
#include "test_models.h"
#include "test_temp.h"

namespace fluoro {
namespace {

using namespace std::chrono_literals;

std::filesystem::path model_file(uint64_t seed, const std::string& name) {
    const auto path = test::unique_temp_path(name + ".gguf");
    gguf::TestModelSpec spec;
    spec.seed = seed;
    spec.n_layer = 4;
    spec.n_ctx = 1024;
    gguf::write_test_model(path, spec);
    return path;
}

using test::all_of;
using test::next_run;

std::vector<int32_t> token_ids(const std::vector<Event>& events) {
    std::vector<int32_t> ids;
    for (const auto& t : all_of<TokenEvent>(events))
        if (t.id >= 0) ids.push_back(t.id);
    return ids;
}

// One greedy run of `text` with the given speculative settings on a fresh engine.
// With `stop` set, the text goes as a Complete with those stop strings instead.
std::vector<Event> run_with(const std::filesystem::path& model, const SpeculativeSettings& spec,
                            const std::string& text, bool capture = false,
                            std::optional<std::vector<std::string>> stop = std::nullopt) {
    Engine engine({TelemetryLevel::Full});
    LoadModel load{model, {}};
    load.settings.threads = 1;
    load.settings.ctx = 1024;
    engine.submit_blocking(load);
    SamplingParams p;
    p.temperature = 0;
    ChangeSettings cs{p, 40, std::nullopt};
    cs.speculative = spec;
    engine.submit(cs);
    if (capture) engine.submit(SetAttentionCapture{{AttentionCaptureSpec{0, -1, 1, 0, 0}}, true});
    if (stop) {
        Complete c;
        c.messages = {{"user", text}};
        c.stop_strings = *stop;
        engine.submit(c);
    } else {
        engine.submit(SendMessage{text});
    }
    std::vector<Event> events = next_run(engine);
    return events;
}

class EngineSpeculative : public testing::TestWithParam<SpecMode> {};

TEST_P(EngineSpeculative, GreedyOutputEqualsPlainAndStepsAddUp) {
    const auto target = model_file(42, "engine_spec_target");
    const auto draft = model_file(43, "engine_spec_draft");
    const std::string text = "alpha beta gamma delta alpha beta gamma delta alpha beta";
    const auto plain = run_with(target, SpeculativeSettings{}, text);
    SpeculativeSettings spec;
    spec.mode = GetParam();
    spec.draft_model = draft;
    spec.max_draft = 4;
    spec.draft_p_min = 0;  // random models' drafts are never sure: draft anyway
    const auto events = run_with(target, spec, text);

    EXPECT_EQ(token_ids(events), token_ids(plain));
    const auto fin = std::get<RunFinished>(events.back());
    EXPECT_EQ(fin.stop, std::get<RunFinished>(plain.back()).stop);
    const auto steps = all_of<SpecStep>(events);
    int64_t drafted = 0, accepted = 0;
    for (const SpecStep& s : steps) {
        EXPECT_EQ(s.drafter.rfind(std::string(spec_mode_name(spec.mode)), 0), 0u) << s.drafter;
        drafted += int64_t(s.drafted.size());
        accepted += s.accepted;
        EXPECT_TRUE((s.bonus >= 0) != (s.resampled >= 0)) << "exactly one of bonus/resampled";
        EXPECT_EQ(s.bonus >= 0, s.accepted == int32_t(s.drafted.size()));
        for (size_t i = 0; i < s.drafted.size(); ++i)
            EXPECT_EQ(s.drafted[i].accepted, int32_t(i) < s.accepted);
        EXPECT_GE(s.verify_ns, 0);
    }
    EXPECT_EQ(drafted, fin.drafted_tokens);
    EXPECT_EQ(accepted, fin.accepted_tokens);
    EXPECT_GT(fin.drafted_tokens, 0) << "the drafter never drafted: the test would be vacuous";
    // Steps: one prefill, then draft (when something was drafted) and verify steps.
    const auto step_events = all_of<StepEvent>(events);
    ASSERT_FALSE(step_events.empty());
    EXPECT_EQ(step_events.front().phase, StepPhase::Prefill);
    int64_t verify = 0, draft_steps = 0;
    for (const StepEvent& s : step_events) {
        verify += s.phase == StepPhase::Verify;
        draft_steps += s.phase == StepPhase::Draft;
        EXPECT_NE(s.phase, StepPhase::Decode);
    }
    EXPECT_GT(verify, 0);
    EXPECT_EQ(draft_steps, int64_t(steps.size()));
}

// A stop string cuts the speculative reply where it cuts the plain one, although the drafted
// tokens arrive several per step.
TEST_P(EngineSpeculative, StopStringsCutWherePlainDecodingDoes) {
    const auto target = model_file(42, "engine_spec_target");
    const auto draft = model_file(43, "engine_spec_draft");
    const std::string text = "alpha beta gamma delta alpha beta gamma delta alpha beta";
    const std::string full =
        std::get<RunFinished>(
            run_with(target, SpeculativeSettings{}, text, false, std::vector<std::string>{}).back())
            .text;
    ASSERT_GE(full.size(), 8u) << full;
    size_t at = full.size() / 2;
    while (at > 0 && (static_cast<unsigned char>(full[at]) & 0xC0) == 0x80) --at;
    size_t end = at + 2;
    while (end < full.size() && (static_cast<unsigned char>(full[end]) & 0xC0) == 0x80) ++end;
    const std::vector<std::string> stop{full.substr(at, end - at)};
    const std::string expected = full.substr(0, full.find(stop[0]));

    const auto plain =
        std::get<RunFinished>(run_with(target, SpeculativeSettings{}, text, false, stop).back());
    EXPECT_EQ(plain.stop, "stop_string");
    EXPECT_EQ(plain.text, expected);
    SpeculativeSettings spec;
    spec.mode = GetParam();
    spec.draft_model = draft;
    spec.max_draft = 4;
    spec.draft_p_min = 0;  // random models' drafts are never sure: draft anyway
    const auto fin = std::get<RunFinished>(run_with(target, spec, text, false, stop).back());
    EXPECT_EQ(fin.stop, "stop_string");
    EXPECT_EQ(fin.text, expected);
}

// The draft confidence reaches the model drafters: a draft that is never that sure drafts
// nothing, and the reply is plain decoding's. The default (0.75) reaches them too: this random
// model's draft is never that sure either.
TEST(EngineSpeculativeConfidence, AnUnsureDraftDraftsNothing) {
    const auto target = model_file(42, "engine_spec_conf");
    const std::string text = "alpha beta gamma delta alpha beta gamma delta alpha beta";
    const auto plain = run_with(target, SpeculativeSettings{}, text);
    SpeculativeSettings spec;
    spec.mode = SpecMode::SelfSpeculative;
    spec.max_draft = 4;
    spec.draft_p_min = 0;
    const auto free = run_with(target, spec, text);
    EXPECT_GT(std::get<RunFinished>(free.back()).drafted_tokens, 0);
    spec.draft_p_min = 0.999f;
    const auto sure = run_with(target, spec, text);
    EXPECT_EQ(token_ids(sure), token_ids(plain));
    EXPECT_EQ(std::get<RunFinished>(sure.back()).drafted_tokens, 0);
    spec.draft_p_min = SpeculativeSettings{}.draft_p_min;
    ASSERT_GT(spec.draft_p_min, 0.0f);
    const auto by_default = run_with(target, spec, text);
    EXPECT_EQ(token_ids(by_default), token_ids(plain));
    EXPECT_EQ(std::get<RunFinished>(by_default.back()).drafted_tokens, 0);
}

INSTANTIATE_TEST_SUITE_P(Drafters, EngineSpeculative,
                         testing::Values(SpecMode::PromptLookup, SpecMode::DraftModel,
                                         SpecMode::SelfSpeculative),
                         [](const testing::TestParamInfo<SpecMode>& i) {
                             return std::string(spec_mode_name(i.param));
                         });

TEST(EngineSpeculativeCapture, SnapshotsComeFromTheTargetOnly) {
    // Self-speculative drafting runs the target's own first layers on the same backend: with
    // capture on, every snapshot must still be the target's (same rows as without drafting).
    const auto target = model_file(42, "engine_spec_capture");
    SpeculativeSettings spec;
    spec.mode = SpecMode::SelfSpeculative;
    spec.exit_layer = 2;
    spec.draft_p_min = 0;  // a random model's draft is never sure: draft anyway
    const std::string text = "one two three one two three one two three";
    const auto with = run_with(target, spec, text, true);
    const auto snaps = all_of<std::shared_ptr<const AttentionSnapshot>>(with);
    const auto stats = all_of<AttentionStats>(with);
    ASSERT_FALSE(snaps.empty());
    ASSERT_FALSE(stats.empty());
    std::map<int64_t, StepPhase> phase;
    for (const StepEvent& st : all_of<StepEvent>(with)) phase[st.index] = st.phase;
    ASSERT_GT(std::count_if(phase.begin(), phase.end(),
                            [](const auto& p) { return p.second == StepPhase::Draft; }),
              0);
    // Captures are flushed at the end of the step that made them: a draft forward leaking into
    // the capture would show up as a snapshot or stats event of a Draft step.
    for (const auto& s : snaps) {
        EXPECT_EQ(s->layer, 0);
        EXPECT_NE(phase.at(s->step), StepPhase::Draft) << "draft attention captured";
    }
    for (const auto& st : stats) EXPECT_NE(phase.at(st.step), StepPhase::Draft);
}

TEST(EngineSpeculativeErrors, AnIncompatibleDraftModelFailsTheRunNotTheEngine) {
    const auto target = model_file(42, "engine_spec_err_target");
    const auto other = test::unique_temp_path("engine_spec_err_draft.gguf");
    gguf::TestModelSpec big;
    big.n_vocab = 900;
    gguf::write_test_model(other, big);
    Engine engine({TelemetryLevel::Summary});
    LoadModel load{target, {}};
    load.settings.threads = 1;
    engine.submit_blocking(load);
    ChangeSettings cs;
    SpeculativeSettings spec;
    spec.mode = SpecMode::DraftModel;
    spec.draft_model = other;
    cs.speculative = spec;
    engine.submit(cs);
    engine.submit(SendMessage{"hi"});
    const auto events = next_run(engine);
    const auto fin = std::get<RunFinished>(events.back());
    EXPECT_EQ(fin.stop, "error");
    EXPECT_NE(fin.error.find("vocabular"), std::string::npos) << fin.error;
    // Speculation off again: the next run works.
    ChangeSettings off;
    off.speculative = SpeculativeSettings{};
    engine.submit(off);
    engine.submit(SendMessage{"hi again"});
    EXPECT_NE(std::get<RunFinished>(next_run(engine).back()).stop, "error");
    ChangeSettings no_file;  // draft_model mode without a file: refused at once
    no_file.speculative = SpeculativeSettings{};
    no_file.speculative->mode = SpecMode::DraftModel;
    EXPECT_THROW(engine.submit_blocking(no_file), Error);
    ChangeSettings sure;  // a draft confidence outside [0, 1): refused at once, by name
    sure.speculative = SpeculativeSettings{};
    sure.speculative->mode = SpecMode::SelfSpeculative;
    sure.speculative->draft_p_min = 1.5f;
    try {
        engine.submit_blocking(sure);
        ADD_FAILURE() << "draft_p_min 1.5 was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("draft_p_min"), std::string::npos) << e.what();
    }
}

TEST(EngineSpeculativeRealModel, SmolLM2PromptLookupMatchesPlainGreedy) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    const std::string text =
        "Repeat exactly: The quick brown fox jumps over the lazy dog near the riverbank.";
    const auto plain = run_with(path, SpeculativeSettings{}, text);
    SpeculativeSettings spec;
    spec.mode = SpecMode::PromptLookup;
    const auto events = run_with(path, spec, text);
    EXPECT_EQ(token_ids(events), token_ids(plain));
    EXPECT_GT(std::get<RunFinished>(events.back()).accepted_tokens, 0);
}

}  // namespace
}  // namespace fluoro
