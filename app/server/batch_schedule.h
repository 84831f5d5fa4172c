// The continuous-batching scheduler as the window's Scheduler view draws it: every step of a
// BatchEngine — which request's sequence put how many tokens in it (a chunk of its prompt or its
// next token), the KV its sequence holds after it — and the queue then. Recorded on the engine's
// thread by its step observer (BatchEngine::set_step_observer), taken by the GUI on its own; the
// last `capacity` steps are kept.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "runtime/batch_engine.h"

namespace fluoro::app {

struct SchedulePart {
    uint64_t request = 0;   // the request's run id (its RunStarted::run)
    int64_t slot = -1;      // the KV sequence it decodes in
    int64_t tokens = 0;     // tokens it put in the step
    bool prefill = false;   // a chunk of its prompt (else its next token)
    int64_t kv_tokens = 0;  // tokens its sequence caches after the step
};

struct ScheduleStep {
    int64_t index = 0;
    double start_ms = 0, end_ms = 0;  // since the schedule was made
    std::vector<SchedulePart> parts;
    int64_t running = 0, waiting = 0;  // requests in a slot / queued after the step
    int64_t kv_used_bytes = 0, kv_bytes = 0;
};

class BatchSchedule {
  public:
    explicit BatchSchedule(int64_t n_slots, size_t capacity = 4096);
    int64_t n_slots() const { return n_slots_; }
    // The step observer (the engine's thread).
    void step(const BatchStep& s, const BatchLoad& l);
    // The steps recorded since the last take (any thread), oldest first.
    std::vector<ScheduleStep> take();
    int64_t steps_recorded() const;  // since it was made

  private:
    const int64_t n_slots_;
    const size_t capacity_;
    const std::chrono::steady_clock::time_point origin_;
    mutable std::mutex mu_;
    std::deque<ScheduleStep> pending_;
    int64_t recorded_ = 0;
};

}  // namespace fluoro::app
