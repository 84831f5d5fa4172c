// RunTelemetry without a model: scripted decode-loop reports go in, and the events that come out
// (through a fake sink, with fake probes) are the sequences the Engine's consumers rely on — steps
// and tokens numbered in order, what closes a step in its order, the level's rules.
#include "runtime/run_telemetry.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"

namespace fluoro {
namespace {

// One line per event (and per probe call, in the same order), easy to compare as a sequence.
std::string describe(const Event& e) {
    if (const auto* s = std::get_if<StepEvent>(&e))
        return "step " + std::to_string(s->index) + " " + std::string(step_phase_name(s->phase)) +
               " " + std::to_string(s->tokens);
    if (const auto* t = std::get_if<TokenEvent>(&e)) return "token " + std::to_string(t->index);
    if (std::holds_alternative<PrefixCacheEvent>(e)) return "prefix";
    if (std::holds_alternative<MemoryCounters>(e)) return "memory";
    if (const auto* k = std::get_if<std::shared_ptr<const KvSnapshot>>(&e))
        return "kv " + std::to_string((*k)->step);
    if (const auto* v = std::get_if<KvEviction>(&e)) return "evict " + std::to_string(v->step);
    if (const auto* sp = std::get_if<SpecStep>(&e)) return "spec " + std::to_string(sp->step);
    if (std::holds_alternative<RunStarted>(e)) return "started";
    if (std::holds_alternative<RunFinished>(e)) return "finished";
    if (std::holds_alternative<ErrorEvent>(e)) return "error";
    return "other";
}

class RunTelemetryTest : public ::testing::Test {
  protected:
    RunTelemetryTest() : prof_(cpu_) {}

    // A run of `prompt` tokens of which `cached` came from a cache; `evictions`: steps whose
    // close finds one KV eviction.
    RunTelemetry make(TelemetryLevel level, int64_t kv_every = 8) {
        level_.store(level);
        RunStarted rs;
        rs.run = 7;
        rs.kind = RunKind::Edit;
        rs.submission = 3;
        RunProbes p;
        p.end_step = [this](int64_t step, int64_t) {
            trace_.push_back("end_step " + std::to_string(step));
        };
        p.take_evictions = [this](int64_t step) {
            std::vector<KvEviction> out;
            ++drained_;
            if (evict_next_) {
                KvEviction e;
                e.run = 7;
                e.step = step;
                out.push_back(e);
                evict_next_ = false;
            }
            return out;
        };
        p.cached_tokens = [this] { return cached_; };
        p.prefix = [](int64_t prompt_tokens, int64_t t_ns) {
            PrefixCacheEvent e;
            e.prompt_tokens = prompt_tokens;
            e.t_ns = t_ns;
            return e;
        };
        p.memory = [](int64_t t_ns) { return MemoryCounters{7, 1, 2, 3, 4, t_ns}; };
        if (with_experts_)
            p.take_experts = [this]() -> std::shared_ptr<const ExpertRouting> {
                auto r = std::make_shared<ExpertRouting>();
                r->n_tokens = ++experts_drained_;  // tells the drains apart
                return r;
            };
        p.kv_snapshot = [](int64_t step, int64_t t_ns) {
            auto s = std::make_shared<KvSnapshot>();
            s->step = step;
            s->t_ns = t_ns;
            return std::shared_ptr<const KvSnapshot>(s);
        };
        return RunTelemetry(std::move(rs), level_, prof_, std::chrono::steady_clock::now(),
                            kv_every, std::move(p), [this](Event e) {
                                trace_.push_back(describe(e));
                                events_.push_back(std::move(e));
                            });
    }

    static GeneratedToken sampled(int32_t id, const SampledToken* sample = nullptr) {
        return GeneratedToken{id, "x", sample, 0};
    }

    // Prefill and then n decode steps, one token each, as generate() reports them; the last
    // forward pass gives the EOG token.
    static GenerateResult run_plain(RunTelemetry& t, int n_tokens, int64_t prompt) {
        t.announce(std::vector<int32_t>(size_t(prompt), 1),
                   std::vector<std::string>(size_t(prompt), "p"));
        GenerateResult r;
        for (int i = 0; i < n_tokens; ++i) {
            t.decoded(sampled(100 + i));
            r.tokens.push_back(100 + i);
        }
        r.prefill.prompt_tokens = prompt;
        r.decode_steps = n_tokens;  // n tokens after the first forward, the last one the EOG's
        t.decode_done(r);
        return r;
    }

    template <class T>
    std::vector<T> all() const {
        std::vector<T> out;
        for (const Event& e : events_)
            if (const auto* v = std::get_if<T>(&e)) out.push_back(*v);
        return out;
    }

    cpu::CpuBackend cpu_{1};
    ProfilingBackend prof_;
    std::atomic<TelemetryLevel> level_{TelemetryLevel::Summary};
    std::vector<Event> events_;
    std::vector<std::string> trace_;
    int64_t cached_ = 0;
    bool evict_next_ = false;
    int drained_ = 0;
    bool with_experts_ = false;
    int experts_drained_ = 0;
};

using Trace = std::vector<std::string>;

TEST_F(RunTelemetryTest, PlainRunNumbersStepsAndTokensAndReportsThePrefixAfterThePrefill) {
    RunTelemetry t = make(TelemetryLevel::Summary);
    cached_ = 2;
    const GenerateResult r = run_plain(t, 2, 5);
    t.finish(r);
    EXPECT_EQ(trace_, (Trace{"started", "end_step 0", "step 0 prefill 3", "prefix", "token 0",
                             "end_step 1", "step 1 decode 1", "token 1", "end_step 2",
                             "step 2 decode 1", "memory", "finished"}));
    const auto prefix = all<PrefixCacheEvent>();
    ASSERT_EQ(prefix.size(), 1u);
    EXPECT_EQ(prefix[0].prompt_tokens, 5);  // the whole prompt, not only what was computed
    const auto steps = all<StepEvent>();
    EXPECT_EQ(prefix[0].t_ns, steps[0].end_ns);
    for (size_t i = 1; i < steps.size(); ++i) EXPECT_EQ(steps[i].start_ns, steps[i - 1].end_ns);
    for (const StepEvent& s : steps) EXPECT_EQ(s.run, 7u);
    EXPECT_FALSE(prof_.timing());  // only level Full times the backend's operations
}

TEST_F(RunTelemetryTest, FlushedTextIsATokenButNoStep) {
    RunTelemetry t = make(TelemetryLevel::Summary);
    t.announce({1, 2}, {"a", "b"});
    t.decoded(sampled(5));
    t.decoded(GeneratedToken{-1, "\xe2", nullptr, 0});
    GenerateResult r;
    r.tokens = {5};
    r.prefill.prompt_tokens = 2;  // one forward pass, its token streamed: no extra step
    t.decode_done(r);
    EXPECT_EQ(trace_,
              (Trace{"started", "end_step 0", "step 0 prefill 2", "prefix", "token 0", "token 1"}));
    EXPECT_EQ(all<TokenEvent>()[1].id, -1);
}

TEST_F(RunTelemetryTest, LevelOffPublishesTokensButNoStepsYetDrainsEveryStep) {
    RunTelemetry t = make(TelemetryLevel::Off);
    evict_next_ = true;
    SampledToken s;
    s.logprob = -0.5f;
    s.n_top = 1;
    s.top_storage[0] = {42, -0.5f};
    t.announce({1, 2, 3}, {"a", "b", "c"});
    t.decoded(sampled(42, &s));
    t.decoded(sampled(43, &s));
    GenerateResult r;
    r.tokens = {42, 43};
    r.prefill.prompt_tokens = 3;
    r.decode_steps = 2;
    t.decode_done(r);
    t.finish(r);
    // The capture is flushed at every step's end (as step 0: no step is counted), the eviction
    // drained without a report, no memory counters at the end.
    EXPECT_EQ(trace_, (Trace{"started", "end_step 0", "token 0", "end_step 0", "token 1",
                             "end_step 0", "finished"}));
    EXPECT_EQ(drained_, 3);
    const auto tokens = all<TokenEvent>();
    ASSERT_EQ(tokens.size(), 2u);
    EXPECT_FLOAT_EQ(tokens[0].logprob, -0.5f);
    EXPECT_TRUE(tokens[0].top.empty());  // alternatives only above level Off
}

// A mixture of experts' routing is drained at every step's end and rides on that step's event;
// at level Off it is drained all the same (the model keeps appending to it) and published nowhere.
TEST_F(RunTelemetryTest, EachStepCarriesTheRoutingDrainedAtItsEnd) {
    with_experts_ = true;
    RunTelemetry t = make(TelemetryLevel::Summary);
    run_plain(t, 2, 5);
    const auto steps = all<StepEvent>();
    ASSERT_EQ(steps.size(), 3u);
    for (size_t i = 0; i < steps.size(); ++i) {
        ASSERT_NE(steps[i].experts, nullptr);
        EXPECT_EQ(steps[i].experts->n_tokens, int64_t(i) + 1);
    }
    events_.clear();
    experts_drained_ = 0;
    RunTelemetry off = make(TelemetryLevel::Off);
    run_plain(off, 2, 5);
    EXPECT_EQ(experts_drained_, 3);
    EXPECT_TRUE(all<StepEvent>().empty());
}

TEST_F(RunTelemetryTest, TokensCarryTheAlternativesAboveLevelOff) {
    RunTelemetry t = make(TelemetryLevel::Summary);
    SampledToken s;
    s.n_top = 2;
    s.top_storage[0] = {42, -0.1f};
    s.top_storage[1] = {9, -2.5f};
    t.announce({1}, {"a"});
    t.decoded(sampled(42, &s));
    const auto tokens = all<TokenEvent>();
    ASSERT_EQ(tokens.size(), 1u);
    ASSERT_EQ(tokens[0].top.size(), 2u);
    EXPECT_EQ(tokens[0].top[1].id, 9);
    EXPECT_EQ(tokens[0].piece, "x");
}

TEST_F(RunTelemetryTest, FullReportsMemoryEveryStepAndTheKvAfterThePrefillAndEveryNSteps) {
    RunTelemetry t = make(TelemetryLevel::Full, 2);
    const GenerateResult r = run_plain(t, 3, 4);
    t.finish(r);
    EXPECT_EQ(trace_,
              (Trace{"started", "end_step 0", "step 0 prefill 4", "prefix",          "memory",
                     "kv 0",    "token 0",    "end_step 1",       "step 1 decode 1", "memory",
                     "token 1", "end_step 2", "step 2 decode 1",  "memory",          "kv 2",
                     "token 2", "end_step 3", "step 3 decode 1",  "memory",          "finished"}));
    const auto steps = all<StepEvent>();
    const auto memory = all<MemoryCounters>();
    ASSERT_EQ(memory.size(), steps.size());
    for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(memory[i].t_ns, steps[i].end_ns);
    EXPECT_TRUE(prof_.timing());
}

TEST_F(RunTelemetryTest, TraceAttachesEachStepsOpsInRunTimeAndFullDoesNot) {
    RunTelemetry t = make(TelemetryLevel::Trace);
    const Act a = prof_.alloc_act(1, 8);
    prof_.add(a, a);  // before the run's announcement: not part of any step
    t.announce({1, 2}, {"a", "b"});
    EXPECT_TRUE(prof_.tracing());
    EXPECT_TRUE(prof_.timing());
    prof_.add(a, a);
    prof_.scale(a, 2.0f);
    t.decoded(sampled(1));  // the prefill: add, scale
    prof_.add(a, a);
    level_.store(TelemetryLevel::Full);
    t.decoded(sampled(2));  // a step at Full: its op is timed but not traced
    prof_.add(a, a);
    level_.store(TelemetryLevel::Trace);
    t.decoded(sampled(3));  // Full's token turned tracing off: this step's add is not traced
    prof_.add(a, a);
    t.decoded(sampled(4));
    const auto steps = all<StepEvent>();
    ASSERT_EQ(steps.size(), 4u);
    ASSERT_TRUE(steps[0].trace);
    ASSERT_EQ(steps[0].trace->ops.size(), 2u);
    EXPECT_EQ(steps[0].trace->name_of(steps[0].trace->ops[0]), "add");
    EXPECT_EQ(steps[0].trace->name_of(steps[0].trace->ops[1]), "scale");
    for (const OpSpan& op : steps[0].trace->ops) {
        EXPECT_GE(op.start_ns, steps[0].start_ns);  // run time, inside its step
        EXPECT_LE(op.end_ns, steps[0].end_ns);
        EXPECT_EQ(op.layer, -1);
        EXPECT_EQ(op.rows, 1);
    }
    EXPECT_LE(steps[0].trace->ops[0].end_ns, steps[0].trace->ops[1].start_ns);
    EXPECT_FALSE(steps[1].trace);  // Full
    // Trace again when it closed, but its add ran while tracing was off: no trace rather than
    // an empty one that would claim the step ran no op.
    EXPECT_FALSE(steps[2].trace);
    ASSERT_TRUE(steps[3].trace);
    EXPECT_EQ(steps[3].trace->ops.size(), 1u);
    // Every step's times per category still come from the same scopes.
    for (const StepEvent& s : steps) EXPECT_GT(s.op_ns[size_t(TimeCategory::Other)], 0);
}

TEST_F(RunTelemetryTest, TracingStopsWhenTheRunEnds) {
    {
        RunTelemetry t = make(TelemetryLevel::Trace);
        t.announce({1}, {"a"});
        EXPECT_TRUE(prof_.tracing());
    }
    EXPECT_FALSE(prof_.tracing());
    const Act a = prof_.alloc_act(1, 8);
    prof_.add(a, a);
    EXPECT_TRUE(prof_.take_trace(0)->ops.empty());
}

TEST_F(RunTelemetryTest, TheLevelIsReadAtEveryStep) {
    RunTelemetry t = make(TelemetryLevel::Summary);
    t.announce({1, 2}, {"a", "b"});
    t.decoded(sampled(1));
    level_.store(TelemetryLevel::Off);
    t.decoded(sampled(2));  // not reported, not counted
    level_.store(TelemetryLevel::Summary);
    t.decoded(sampled(3));
    const auto steps = all<StepEvent>();
    ASSERT_EQ(steps.size(), 2u);
    EXPECT_EQ(steps[1].index, 1);
    EXPECT_EQ(steps[1].phase, StepPhase::Decode);
    const auto tokens = all<TokenEvent>();
    ASSERT_EQ(tokens.size(), 3u);
    for (size_t i = 0; i < tokens.size(); ++i) EXPECT_EQ(tokens[i].index, int64_t(i));
    EXPECT_EQ(all<RunStarted>()[0].level, TelemetryLevel::Summary);  // the run's, at its start
}

TEST_F(RunTelemetryTest, EvictionsComeBeforeTheStepTheyMadeRoomFor) {
    RunTelemetry t = make(TelemetryLevel::Summary);
    t.announce({1}, {"a"});
    t.decoded(sampled(1));
    evict_next_ = true;
    t.decoded(sampled(2));
    EXPECT_EQ(trace_, (Trace{"started", "end_step 0", "step 0 prefill 1", "prefix", "token 0",
                             "end_step 1", "evict 1", "step 1 decode 1", "token 1"}));
    const auto steps = all<StepEvent>();
    EXPECT_LE(all<KvEviction>()[0].t_ns, steps[1].end_ns);
}

TEST_F(RunTelemetryTest, SpeculativeStepsArePrefillDraftAndVerify) {
    RunTelemetry t = make(TelemetryLevel::Summary);
    cached_ = 1;
    t.announce({1, 2, 3, 4}, {"a", "b", "c", "d"});
    const spec::SpecCallbacks cb = t.spec_callbacks("lookup");
    cb.on_prefilled();  // the prompt but its last token, less what was cached
    cb.on_drafted(0);   // nothing drafted: no draft step
    spec::SpecStepInfo plain;
    plain.next = 8;
    cb.on_step(plain);  // a verification of nothing: a step, no SpecStep
    cb.on_token(sampled(8));
    cb.on_drafted(3);
    spec::SpecStepInfo info;
    info.drafted = {5, 6, 7};
    info.q = {0.9f, 0.8f, 0.7f};
    info.p = {0.95f, 0.5f, 0.1f};
    info.accepted = 2;
    info.next = 11;
    info.kind = spec::NextKind::Resampled;
    info.draft_ms = 1.5;
    info.verify_ms = 2.0;
    cb.on_step(info);
    cb.on_token(sampled(5));
    cb.on_token(sampled(6));
    cb.on_token(sampled(11));
    EXPECT_EQ(trace_,
              (Trace{"started", "end_step 0", "step 0 prefill 2", "prefix", "end_step 1",
                     "step 1 verify 1", "token 0", "end_step 2", "step 2 draft 3", "end_step 3",
                     "step 3 verify 4", "spec 3", "token 1", "token 2", "token 3"}));
    const SpecStep st = all<SpecStep>()[0];
    EXPECT_EQ(st.drafter, "lookup");
    EXPECT_EQ(st.accepted, 2);
    ASSERT_EQ(st.drafted.size(), 3u);
    EXPECT_TRUE(st.drafted[1].accepted);
    EXPECT_FALSE(st.drafted[2].accepted);
    EXPECT_FLOAT_EQ(st.drafted[2].p, 0.1f);
    EXPECT_EQ(st.resampled, 11);
    EXPECT_EQ(st.bonus, -1);
    EXPECT_EQ(st.draft_ns, 1500000);
    EXPECT_EQ(st.verify_ns, 2000000);
    EXPECT_EQ(all<PrefixCacheEvent>()[0].prompt_tokens, 4);
}

TEST_F(RunTelemetryTest, RunFinishedCopiesTheResult) {
    RunTelemetry t = make(TelemetryLevel::Summary);
    t.announce({1}, {"a"});
    GenerateResult r;
    r.tokens = {4, 5, 6};
    r.text = "abc";
    r.stop = StopReason::EndOfGeneration;
    r.prefill.prompt_tokens = 10;
    r.prefill.reused_tokens = 4;
    r.prefill.computed_tokens = 6;
    r.prefill.ms = 1.25;
    r.ttft_ms = 2.5;
    r.decode_ms = 7.5;
    r.decode_steps = 2;
    r.drafted_tokens = 9;
    r.accepted_tokens = 5;
    t.finish(r);
    const auto fin = all<RunFinished>();
    ASSERT_EQ(fin.size(), 1u);
    const RunFinished& f = fin[0];
    EXPECT_EQ(f.run, 7u);
    EXPECT_EQ(f.stop, "eog");
    EXPECT_EQ(f.error, "");
    EXPECT_EQ(f.text, "abc");
    EXPECT_EQ(f.n_tokens, 3);
    EXPECT_EQ(f.prompt_tokens, 10);
    EXPECT_EQ(f.cached_tokens, 4);
    EXPECT_EQ(f.computed_tokens, 6);
    EXPECT_DOUBLE_EQ(f.prefill_ms, 1.25);
    EXPECT_DOUBLE_EQ(f.ttft_ms, 2.5);
    EXPECT_DOUBLE_EQ(f.decode_ms, 7.5);
    EXPECT_EQ(f.decode_steps, 2);
    EXPECT_EQ(f.drafted_tokens, 9);
    EXPECT_EQ(f.accepted_tokens, 5);
    EXPECT_GT(f.t_ns, 0);
}

TEST_F(RunTelemetryTest, RunStartedCarriesThePrompt) {
    RunTelemetry t = make(TelemetryLevel::Full);
    t.announce({3, 4}, {"he", "llo"});
    const RunStarted rs = all<RunStarted>()[0];
    EXPECT_EQ(rs.run, 7u);
    EXPECT_EQ(rs.prompt_tokens, 2);
    EXPECT_EQ(rs.prompt_ids, (std::vector<int32_t>{3, 4}));
    EXPECT_EQ(rs.prompt_pieces, (std::vector<std::string>{"he", "llo"}));
    EXPECT_EQ(rs.level, TelemetryLevel::Full);
    EXPECT_EQ(rs.t_ns, 0);
    EXPECT_GT(rs.wall_clock_ms, 0);
}

TEST_F(RunTelemetryTest, AFailureBeforeTheAnnouncementStillAnnouncesTheRun) {
    RunTelemetry t = make(TelemetryLevel::Summary);
    t.fail("the prompt does not fit");
    EXPECT_EQ(trace_, (Trace{"started", "error", "finished"}));
    const ErrorEvent err = all<ErrorEvent>()[0];
    EXPECT_EQ(err.run, 7u);
    EXPECT_EQ(err.command, "edit");
    EXPECT_EQ(err.message, "the prompt does not fit");
    EXPECT_EQ(err.submission, 3u);
    const RunFinished fin = all<RunFinished>()[0];
    EXPECT_EQ(fin.stop, "error");
    EXPECT_EQ(fin.error, "the prompt does not fit");
}

TEST_F(RunTelemetryTest, AFailureAfterTheAnnouncementDoesNotRepeatIt) {
    RunTelemetry t = make(TelemetryLevel::Summary);
    t.announce({1}, {"a"});
    t.decoded(sampled(1));
    t.fail("cancelled by a bad thing");
    EXPECT_EQ(trace_, (Trace{"started", "end_step 0", "step 0 prefill 1", "prefix", "token 0",
                             "error", "finished"}));
}

// The reasoning split on known text: a prompt that opens <think>, then tokens that cut </think>
// in three; the tokens up to the one that completes the close (">\n\n") are reasoning, the rest
// answer.
class RunTelemetryReasoningTest : public RunTelemetryTest {
  protected:
    void run_pieces(RunTelemetry& t, const std::vector<std::string>& prompt,
                    const std::vector<std::string>& pieces) {
        t.announce(std::vector<int32_t>(prompt.size(), 1), prompt);
        GenerateResult r;
        for (size_t i = 0; i < pieces.size(); ++i) {
            t.decoded(GeneratedToken{int32_t(100 + i), pieces[i], nullptr, 0});
            r.tokens.push_back(int32_t(100 + i));
            r.text += pieces[i];
        }
        r.decode_steps = int64_t(pieces.size());
        t.decode_done(r);
        t.finish(r);
    }
};

TEST_F(RunTelemetryReasoningTest, OpenInThePromptCloseCutAcrossTokens) {
    RunTelemetry t = make(TelemetryLevel::Summary);
    run_pieces(t, {"<|im_start|>", "assistant\n", "<think>", "\n"},
               {"Two", " plus two.</", "think", ">\n\n", "Four", "."});
    const auto tokens = all<TokenEvent>();
    ASSERT_EQ(tokens.size(), 6u);
    const std::vector<bool> reasoning = {true, true, true, true, false, false};
    std::string r, a;
    for (size_t i = 0; i < tokens.size(); ++i) {
        EXPECT_TRUE(tokens[i].split);
        EXPECT_EQ(tokens[i].reasoning, reasoning[i]) << i;
        r += tokens[i].reasoning_text;
        a += tokens[i].answer_text;
    }
    EXPECT_EQ(tokens[1].reasoning_text, " plus two.");  // "</" held back
    EXPECT_EQ(r, "Two plus two.");
    EXPECT_EQ(a, "\n\nFour.");
    const auto fin = all<RunFinished>();
    ASSERT_EQ(fin.size(), 1u);
    EXPECT_EQ(fin[0].reasoning_tokens, 4);
    EXPECT_EQ(fin[0].n_tokens, 6);
    EXPECT_EQ(fin[0].reasoning_ns, tokens[3].t_ns);  // the token that closed the block
    EXPECT_EQ(fin[0].reasoning_text, "Two plus two.");
    EXPECT_EQ(fin[0].answer_text, "\n\nFour.");
    EXPECT_EQ(fin[0].text, "Two plus two.</think>\n\nFour.");  // as generated
}

TEST_F(RunTelemetryReasoningTest, NoReasoningAndAHeldTailFlushedAtTheEnd) {
    RunTelemetry t = make(TelemetryLevel::Summary);
    run_pieces(t, {"<|im_start|>", "assistant\n"}, {"a ", "<"});
    const auto tokens = all<TokenEvent>();
    ASSERT_EQ(tokens.size(), 3u);  // the held "<" comes with an id -1 event
    EXPECT_EQ(tokens[2].id, -1);
    EXPECT_EQ(tokens[2].answer_text, "<");
    for (const TokenEvent& te : tokens) EXPECT_FALSE(te.reasoning);
    const auto fin = all<RunFinished>();
    ASSERT_EQ(fin.size(), 1u);
    EXPECT_EQ(fin[0].reasoning_tokens, 0);
    EXPECT_EQ(fin[0].reasoning_ns, 0);
    EXPECT_EQ(fin[0].answer_text, "a <");
}

TEST_F(RunTelemetryReasoningTest, ControlTokensOfGptOssComeFromTheProbe) {
    // The decode loop's text leaves control tokens out; the probe gives their markup.
    level_.store(TelemetryLevel::Summary);
    RunStarted rs;
    rs.run = 7;
    RunProbes p;
    const std::vector<std::string> control = {
        "<|channel|>", "", "<|message|>", "", "<|end|>", "<|start|>", "",
        "<|channel|>", "", "<|message|>", ""};
    const std::vector<std::string> text = {"",          "analysis", "",      "hmm", "",  "",
                                           "assistant", "",         "final", "",    "ok"};
    p.control_text = [&](int32_t id) { return control[size_t(id - 100)]; };
    RunTelemetry t(std::move(rs), level_, prof_, std::chrono::steady_clock::now(), 8, std::move(p),
                   [this](Event e) { events_.push_back(std::move(e)); });
    run_pieces(t, {"<|start|>assistant"}, text);
    const auto fin = all<RunFinished>();
    ASSERT_EQ(fin.size(), 1u);
    EXPECT_EQ(fin[0].reasoning_text, "hmm");
    EXPECT_EQ(fin[0].answer_text, "ok");
    // From the token that opened the analysis message (its <|channel|>analysis header is not
    // known to be reasoning until <|message|>) to the one that opened final's message.
    EXPECT_EQ(fin[0].reasoning_tokens, 8);
}

}  // namespace
}  // namespace fluoro
