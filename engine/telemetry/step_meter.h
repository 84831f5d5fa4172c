// Cuts a run into steps on the engine thread: each step runs from the previous boundary to now,
// and its wall time is split into the profiling backend's categories accumulated meanwhile plus
// Sampling (the rest of the step: host time outside the backend).
#pragma once

#include <chrono>
#include <cstdint>

#include "telemetry/events.h"
#include "telemetry/profiling_backend.h"

namespace fluoro {

class StepMeter {
  public:
    using Clock = std::chrono::steady_clock;
    // Times are measured from run_start; the first step starts now.
    StepMeter(const ProfilingBackend& backend, Clock::time_point run_start);

    int64_t now_ns() const;
    // The run's start as steady_clock nanoseconds since its epoch (to make spans run-relative).
    int64_t run_start_ns() const { return run_start_.time_since_epoch().count(); }
    // Backend time (all categories) since the current step began.
    int64_t backend_ns_in_step() const;
    // Closes the current step at now and starts the next one. With split, op_ns holds the
    // per-category times (Sampling = wall - backend time, never negative); without, zeros.
    StepEvent close(uint64_t run, int64_t index, StepPhase phase, int64_t tokens, bool split);
    // Starts a new step at now without reporting the current one.
    void restart();

  private:
    const ProfilingBackend& backend_;
    Clock::time_point run_start_;
    int64_t step_start_ns_ = 0;
    CategoryTimes base_{};
};

}  // namespace fluoro
