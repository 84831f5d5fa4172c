#include "backend/worker_trace.h"

#include <chrono>

namespace fluoro {

WorkerTrace::WorkerTrace(int workers, int64_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {
    rings_.reserve(size_t(workers < 1 ? 1 : workers));
    for (int w = 0; w < (workers < 1 ? 1 : workers); ++w) {
        auto r = std::make_unique<Ring>();
        r->spans = std::make_unique<WorkerBusy[]>(size_t(capacity_));
        rings_.push_back(std::move(r));
    }
}

void WorkerTrace::record(const WorkerBusy& span) noexcept {
    if (span.worker < 0 || size_t(span.worker) >= rings_.size()) return;
    Ring& r = *rings_[size_t(span.worker)];
    const uint64_t w = r.written.load(std::memory_order_relaxed);
    // Acquire: the ring entries below `read` are free once the reader published it.
    if (w - r.read.load(std::memory_order_acquire) >= uint64_t(capacity_)) {
        r.dropped.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    r.spans[size_t(w % uint64_t(capacity_))] = span;
    r.written.store(w + 1, std::memory_order_release);  // publishes the entry
}

int64_t WorkerTrace::drain(std::vector<WorkerBusy>& out) {
    int64_t dropped = 0;
    for (auto& rp : rings_) {
        Ring& r = *rp;
        const uint64_t end = r.written.load(std::memory_order_acquire);
        uint64_t at = r.read.load(std::memory_order_relaxed);
        for (; at < end; ++at) out.push_back(r.spans[size_t(at % uint64_t(capacity_))]);
        r.read.store(at, std::memory_order_release);  // hands the entries back
        dropped += r.dropped.exchange(0, std::memory_order_relaxed);
    }
    return dropped;
}

int64_t WorkerTrace::now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace fluoro
