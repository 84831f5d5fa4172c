// One generation's telemetry: the step and token bookkeeping that the plain and the speculative
// decode loops share. It cuts the run into steps (StepMeter), numbers the steps and the tokens,
// and turns what a loop reports into the run's events — RunStarted, TokenEvent, StepEvent and
// what closes a step, SpecStep, RunFinished — published through an injected sink. What it reads
// from the engine comes through RunProbes, so its event sequences are tested without a model
// (tests/engine/runtime/run_telemetry_test.cpp). Engine thread only.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/reasoning_split.h"
#include "core/run_errors.h"
#include "decode/generate.h"
#include "settings/settings.h"  // TelemetryLevel
#include "speculative/spec_generate.h"
#include "telemetry/events.h"
#include "telemetry/profiling_backend.h"
#include "telemetry/step_meter.h"

namespace fluoro::tok {
class Tokenizer;
}

namespace fluoro {

// What the telemetry reads from the engine while a run goes on. An empty one reports nothing.
struct RunProbes {
    // At every step's end, whatever the level: publishes the attention captured during the step
    // (as step `step`) and applies a capture submitted meanwhile, from the next step on.
    std::function<void(int64_t step, int64_t t_ns)> end_step;
    // The KV policy's evictions during the step, for step `step` (t_ns is stamped when
    // published). Drained at every level, published unless the level is Off.
    std::function<std::vector<KvEviction>(int64_t step)> take_evictions;
    // Prompt tokens the prefill took from a cache (read once the prefill ran).
    std::function<int64_t()> cached_tokens;
    // What the prefill found cached, published after the prefill's step.
    std::function<PrefixCacheEvent(int64_t prompt_tokens, int64_t t_ns)> prefix;
    std::function<MemoryCounters(int64_t t_ns)> memory;
    std::function<std::shared_ptr<const KvSnapshot>(int64_t step, int64_t t_ns)> kv_snapshot;
    // The text of a generated control token, which the decode loop's text leaves out (gpt-oss's
    // <|channel|> markup), for the reasoning split; "" for other tokens.
    std::function<std::string(int32_t id)> control_text;
    // Any token's text in the vocabulary, special tokens by name (TokenEvent::token_text).
    std::function<std::string(int32_t id)> token_text;
    // A mixture of experts: the routing of the step's forward passes (drained at every step's
    // end at every level; attached to the StepEvent unless the level is Off); null when none.
    std::function<std::shared_ptr<const ExpertRouting>()> take_experts;
};

using EventSink = std::function<void(Event)>;

class RunTelemetry {
  public:
    // started: the run as the engine describes it (run, conversation, model, settings); the
    // prompt comes with announce(). Its level and wall clock are taken now: the run's level,
    // while each step reads `level` afresh (it may change during the run). The run's times count
    // from run_start. Level Full takes a KV snapshot after the prefill and every
    // kv_snapshot_every steps.
    RunTelemetry(RunStarted started, const std::atomic<TelemetryLevel>& level,
                 ProfilingBackend& profiling, StepMeter::Clock::time_point run_start,
                 int64_t kv_snapshot_every, RunProbes probes, EventSink sink);
    // Stops tracing and drops what was traced after the last step.
    ~RunTelemetry();
    RunTelemetry(const RunTelemetry&) = delete;
    RunTelemetry& operator=(const RunTelemetry&) = delete;

    uint64_t run() const { return started_.run; }
    const RunStarted& started() const { return started_; }
    int64_t now_ns() const { return meter_.now_ns(); }

    // Publishes RunStarted with the prompt as the model sees it (ids, each one's text, and
    // which are special tokens: RunStarted::prompt_special, empty when not known). A prompt
    // whose text ends inside an open reasoning block (prompt_opens_reasoning) starts the reply
    // in the reasoning; every token is then split (TokenEvent::reasoning, reasoning_text,
    // answer_text) and RunFinished counts the reasoning.
    void announce(std::vector<int32_t> prompt_ids, std::vector<std::string> prompt_pieces,
                  std::vector<uint8_t> prompt_special = {});
    // The same with each token's text and kind read from the model's tokenizer.
    void announce(const std::vector<int32_t>& prompt_ids, const tok::Tokenizer& tokenizer);

    // Plain decoding (generate()): a streamed token. A sampled one (id >= 0) first closes the
    // step that produced it: the prefill, then one decode step per token.
    void decoded(const GeneratedToken& t);
    // After generate(): the forward pass whose logits gave the EOG token (or that a cancel
    // interrupted) streamed no token of its own; it is a step too.
    void decode_done(const GenerateResult& r);

    // Speculative decoding (spec::generate_speculative's callbacks): the prefill (all of the
    // prompt but its last token), a draft of n tokens (nothing when n == 0), a verification,
    // a streamed token.
    void prefilled();
    void drafted(int32_t n);
    void verified(const spec::SpecStepInfo& info, std::string_view drafter);
    void token(const GeneratedToken& t);
    spec::SpecCallbacks spec_callbacks(std::string drafter);

    // The end of a successful run: at level Summary the memory counters, a token event with
    // id -1 for text the reasoning split still held back (a partial marker at the very end),
    // then RunFinished with the result's counts.
    void finish(const GenerateResult& r);
    // The run failed with `what`: RunStarted if it was not announced yet, the ErrorEvent, and
    // RunFinished with stop "error".
    // `overflow`: the prompt did not fit the context (RunFinished::overflow_*).
    void fail(std::string_view what, const ContextOverflowError* overflow = nullptr);

  private:
    void publish(Event e) { sink_(std::move(e)); }
    // Timing at Full and Trace, tracing at Trace (a step uses the level current when it ends).
    void apply_level(TelemetryLevel level);
    void close_step(TelemetryLevel level, StepPhase phase, int64_t tokens);
    void emit_token(const GeneratedToken& t, TelemetryLevel level);
    void emit_memory(int64_t t_ns);
    int64_t prefill_tokens(int64_t held_back) const;

    RunStarted started_;
    const std::atomic<TelemetryLevel>& level_;
    ProfilingBackend& profiling_;
    StepMeter meter_;
    int64_t kv_snapshot_every_;
    RunProbes probes_;
    EventSink sink_;
    int64_t prompt_tokens_ = 0;
    int64_t n_step_ = 0;   // steps published (none at level Off)
    int64_t n_token_ = 0;  // tokens published
    bool in_prefill_ = true;
    bool announced_ = false;
    ReasoningSplitter split_;
    int64_t reasoning_tokens_ = 0, reasoning_ns_ = 0;
    std::string reasoning_text_, answer_text_;
};

}  // namespace fluoro
