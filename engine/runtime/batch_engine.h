// Serving several clients at once: one thread owns a model, a paged KV cache whose pool the
// `parallel` live sequences and the prefix cache share, and runs continuous batching
// (decode/batch_decoder.h) over the completions submitted from any thread — new requests join
// between steps, first come first served, and wait while every slot is busy. Each completion's
// events are those the Engine publishes for a Complete at telemetry level Summary
// (ConversationStarted — each request a conversation of its own, numbered like its run —
// RunStarted, StepEvent, PrefixCacheEvent, TokenEvent, MemoryCounters, RunFinished:
// runtime/run_telemetry.h),
// handed to the caller on the caller's own thread, so a slow client never stalls the batch.
//
// What it does not do (use the Engine, one conversation at a time, for these): speculative
// decoding, evicting KV policies, attention capture, KV snapshots, the logit lens. Sliding-window
// layers store every token. `fluoro serve --parallel N` runs on it, and the window's API server
// with parallel slots; the window's own chat drives the Engine (runtime/engine.h).
//
// Threads: every public method may be called from any thread; run() blocks its caller.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>

#include "backend/backend_kind.h"
#include "decode/batch_decoder.h"
#include "runtime/engine_commands.h"
#include "sampling/sampling_params.h"
#include "telemetry/events.h"

namespace fluoro {

struct BatchEngineOptions {
    int64_t parallel = 4;         // sequences decoding at once (slots)
    int64_t prefill_chunk = 256;  // prompt tokens per step at most, over all prompts
    SamplingParams sampling;      // what a Complete without its own uses
    int64_t max_tokens = 512;     // likewise
    // Makes the backend (ModelSettings::backend); empty: the CPU backend only.
    BackendFactory backend_factory{};
};

// The load right now (for /metrics and the scheduler view).
struct BatchLoad {
    int64_t n_slots = 0;               // BatchEngineOptions::parallel
    int64_t running = 0, waiting = 0;  // requests in a slot / queued for one
    int64_t steps = 0;                 // forward steps so far
    int64_t step_tokens = 0;           // tokens those steps computed (decode and prompt)
    int64_t kv_used_bytes = 0, kv_bytes = 0;
};

class BatchEngine {
  public:
    // Loads the model (ModelSettings: backend, threads, ctx, batch, KV type, MLA path, prefix
    // cache slots and file) and starts the thread. Throws Error naming what failed; also for a
    // `parallel` or `prefill_chunk` below 1.
    BatchEngine(const std::filesystem::path& model, const ModelSettings& settings,
                BatchEngineOptions opt);
    ~BatchEngine();  // cancels what runs and waits, saves the prefix cache file, joins
    BatchEngine(const BatchEngine&) = delete;
    BatchEngine& operator=(const BatchEngine&) = delete;

    // The model as ModelLoaded describes it (the prefix cache file's restore note included).
    const ModelLoaded& model() const;
    const BatchEngineOptions& options() const;

    // Runs one completion to its end, calling on_event on this thread for each of its events,
    // and returns its RunFinished: stop "error" with the message when it failed, "cancelled"
    // when `cancel` (optional; read while it waits and at every step) was set.
    RunFinished run(const Complete& c, const std::function<void(const Event&)>& on_event,
                    const std::atomic<bool>* cancel = nullptr);
    BatchLoad load() const;
    // Called on the engine's thread after every step with what it computed and the load then
    // (the requests the step ended still counted as running), before those requests' callers
    // see their RunFinished; must be quick (set before the first run()).
    void set_step_observer(std::function<void(const BatchStep&, const BatchLoad&)> observer);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace fluoro
