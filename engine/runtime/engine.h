// The Engine: one thread that owns the backend, the model, the KV cache and the conversation,
// runs the commands submitted to it in order (engine_commands.h) and reports what happens as
// telemetry events on a bounded stream (telemetry/event_stream.h). Nothing else touches the model:
// callers only submit commands and read events, so a GUI thread never waits on inference.
//
// Threads: every public method may be called from any thread. Private methods prefixed rt_ run
// on the engine thread only. A command that fails yields an ErrorEvent (and, for a generation, a
// RunFinished with stop "error"); the engine then goes on with the next command.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend_kind.h"
#include "chat/chat_render.h"
#include "runtime/command_queue.h"
#include "runtime/engine_commands.h"
#include "telemetry/event_stream.h"

namespace fluoro {

struct RunProbes;
struct SequenceEviction;

struct EngineOptions {
    TelemetryLevel level = TelemetryLevel::Summary;
    size_t max_pending_snapshots = 64;  // EventStream budget for bulky snapshots
    int64_t kv_snapshot_every = 8;      // decode steps between KV snapshots at level Full
    // Makes the backend of each model load (ModelSettings::backend); empty: the CPU backend only.
    BackendFactory backend_factory{};
};

class Engine {
  public:
    explicit Engine(EngineOptions opt = {});
    ~Engine();  // cancels the current run, drops queued commands, joins the thread
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    EventStream& events() { return events_; }

    // Plain submission: runs after everything queued before it. Returns the command's submission
    // number (from 1), which its RunStarted and a failure's ErrorEvent carry.
    uint64_t submit(Command c);
    // Latest wins: replaces a queued, not yet started command with the same tag.
    uint64_t submit_tagged(std::string tag, Command c);
    // Waits until the command has run; throws fluoro::Error with its failure. (The failure is
    // also reported as an ErrorEvent, like for any other submission.) Never call it from a
    // consumer that the engine might be waiting on.
    void submit_blocking(Command c);
    // Stops the running generation within one decode step and makes the generations already
    // queued stop at once (they report stop "cancelled"). Later submissions are unaffected.
    void cancel();

    void set_telemetry_level(TelemetryLevel level) { level_.store(level); }
    TelemetryLevel telemetry_level() const { return level_.load(); }

  private:
    struct State;  // what the engine thread owns (engine.cpp)

    void rt_loop();
    void rt_run(const QueuedCommand& q);
    void rt_execute(const Command& c);
    void rt_load(const LoadModel& c);
    void rt_unload();
    // Saves the persisted prefix cache when due (force: whenever it changed); a failure is an
    // ErrorEvent, never the command's.
    void rt_save_prefix_cache(bool force);
    std::string rt_drop_non_finite_state();
    // resume: an earlier conversation's id to take up again (0: a new one); title: what to
    // store it as (ConversationStarted::title)
    void rt_new_conversation(std::string system_prompt, std::vector<ChatMessage> messages = {},
                             uint64_t resume = 0, std::string title = {});
    void rt_settings(const ChangeSettings& c);
    // `turn`: the message the reply answers when it is not {"user", user_text} (a tool result).
    void rt_generate(RunKind kind, int64_t kept_messages, std::string user_text,
                     std::optional<ChatMessage> turn = std::nullopt);
    // A new run as RunStarted describes it, before its prompt is known.
    RunStarted rt_describe_run(RunKind kind, int64_t kept_messages, std::string user_text);
    RunProbes rt_run_probes(uint64_t run);  // what the run's telemetry reads from the engine
    void rt_complete(const Complete& c);
    void rt_logit_lens(const ComputeLogitLens& c);                  // answers with a LogitLensEvent
    void rt_attention_overview(const ComputeAttentionOverview& c);  // an AttentionOverview
    // Generated token `token` of run `run` located in the live conversation's cache: the position
    // `offset` from it (-1: the one that predicted it), the token there, and the generated token.
    // Throws Error saying why when `what` ("the logit lens", ...) cannot look there.
    struct RunPosition {
        int64_t pos = 0;
        int32_t input = -1, generated = -1;
    };
    RunPosition rt_run_position(uint64_t run, int64_t token, int64_t offset,
                                const char* what) const;
    // The conversation's KV cache and sequence, afresh, for the settings and the KV policy.
    void rt_make_kv(const ModelSettings& ms);
    void rt_build_drafter();  // for the speculative settings, when none is built
    std::shared_ptr<const KvSnapshot> rt_kv_snapshot(uint64_t run, int64_t step,
                                                     int64_t t_ns) const;
    KvEviction rt_kv_eviction(uint64_t run, int64_t step, SequenceEviction& e) const;
    void rt_apply_capture();  // the backend's capture request from the command and the policy
    void rt_set_capture(const SetAttentionCapture& c);
    void rt_take_pending_capture();  // a SetAttentionCapture submitted during a run
    void rt_flush_capture(uint64_t run, int64_t step, int64_t t_ns);
    void note_capture(const Command& c);  // any thread: remembers a SetAttentionCapture
    // While hold_wakes_ (one decode step's events), the consumer is woken once, at the end.
    void publish(Event e) { events_.push(std::move(e), !hold_wakes_); }
    class WakeBatch;  // holds the wakes for its lifetime
    bool hold_wakes_ = false;
    int64_t engine_ns() const;

    EngineOptions opt_;
    EventStream events_;
    CommandQueue queue_;
    std::atomic<TelemetryLevel> level_;
    std::mutex cancel_mu_;
    uint64_t cancel_upto_ = 0;  // commands with seq <= this are cancelled
    std::atomic<bool> cancel_flag_{false};
    std::mutex capture_mu_;
    std::optional<SetAttentionCapture> pending_capture_;  // guarded by capture_mu_
    std::atomic<bool> capture_pending_{false};
    std::chrono::steady_clock::time_point started_;
    std::unique_ptr<State> state_;
    std::thread thread_;  // last: starts after everything above exists
};

}  // namespace fluoro
