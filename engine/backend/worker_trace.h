// Per-worker busy spans of a backend's host thread pool, recorded while a step is traced
// (telemetry level Trace): each worker that ran tasks of a parallel region writes one span — from
// its first claimed task to the end of its last — and the calling thread also writes the span it
// spent waiting for the others (tasks == 0). Lock-free: every worker owns a single-producer,
// single-consumer ring of fixed capacity, allocated up front; the engine thread drains them all
// after the step. A full ring drops the span and counts it (dropped()), it never blocks a worker.
// Times are steady_clock nanoseconds since its epoch (the profiler converts them to run time).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace fluoro {

struct WorkerBusy {
    int64_t start_ns = 0, end_ns = 0;  // steady_clock since epoch
    int32_t worker = 0;                // 0 = the calling (engine) thread
    int32_t tasks = 0;                 // tasks it ran in the region; 0 = waiting for the others
};

class WorkerTrace {
  public:
    // capacity: spans per worker between two drains (a decode step of a 30-layer model runs a few
    // hundred regions; the default holds a long prefill's too).
    explicit WorkerTrace(int workers, int64_t capacity = 16384);

    int workers() const { return int(rings_.size()); }
    // From worker `worker`'s own thread only. Out-of-range workers are ignored.
    void record(const WorkerBusy& span) noexcept;
    // From one reader thread: appends every span recorded since the last drain, worker by worker
    // (each worker's in its order), and returns how many were dropped meanwhile.
    int64_t drain(std::vector<WorkerBusy>& out);
    // Steady-clock now in nanoseconds, the timestamps record() expects.
    static int64_t now_ns() noexcept;

  private:
    struct alignas(64) Ring {
        std::unique_ptr<WorkerBusy[]> spans;
        std::atomic<uint64_t> written{0};  // only the worker stores
        std::atomic<uint64_t> read{0};     // only the reader stores
        std::atomic<int64_t> dropped{0};
    };
    int64_t capacity_;
    std::vector<std::unique_ptr<Ring>> rings_;
};

}  // namespace fluoro
