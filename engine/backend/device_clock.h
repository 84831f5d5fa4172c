// A clock on an asynchronous backend's own queue, so profiling can time each operation where it
// runs without waiting for the device after every call: mark() queues a timestamp behind the
// work queued so far and returns at once; elapsed_ns() waits for the last mark and reads them all.
// The CUDA backend's is made of CUDA events on its stream (backend/cuda/cuda_clock.h); a
// synchronous backend (the CPU) has none — the host clock around a call is the call's time.
#pragma once

#include <cstdint>
#include <span>

namespace fluoro {

class DeviceClock {
  public:
    virtual ~DeviceClock() = default;
    // Queues a timestamp behind every operation queued so far, without waiting; returns its
    // index among the marks made since the last reset (0, 1, ...). Throws Error when the device
    // refuses.
    virtual int32_t mark() = 0;
    // How many marks were made since the last reset.
    virtual int32_t marks() const = 0;
    // Waits until every mark has passed, then ns[i] = mark i's time minus mark 0's, in
    // nanoseconds (non-decreasing: the marks are in queue order); ns.size() must be marks().
    // Throws Error when the device failed meanwhile.
    virtual void elapsed_ns(std::span<int64_t> ns) = 0;
    // Forgets the marks (their storage is kept for the next ones).
    virtual void reset() = 0;
};

}  // namespace fluoro
