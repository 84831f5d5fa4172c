// The bounded stream between the engine thread and a consumer. push() never blocks the engine.
// Tokens, steps and every other small event are always kept; bulky snapshots (attention, KV) are
// decimated when the consumer falls behind — every other one is kept once half the snapshot
// budget is queued, none once all of it is — and the drops are counted and reported to the
// consumer as a DropReport event before the next event it pops.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "telemetry/events.h"

namespace fluoro {

struct EventStreamStats {
    int64_t pushed = 0;  // accepted events
    int64_t dropped_attention = 0, dropped_kv = 0;
    size_t pending = 0;
    size_t pending_snapshots = 0;
};

class EventStream {
  public:
    // At most max_pending_snapshots snapshots wait in the queue at any time (at least 2).
    explicit EventStream(size_t max_pending_snapshots = 64);

    // wake = false leaves a waiting consumer asleep: a producer that emits several events at
    // once (one decode step's) wakes it once, with wake(), after the last.
    void push(Event e, bool wake = true);
    void wake();
    // Waits up to `timeout` for an event; nullopt when none came (or the stream is closed and
    // empty).
    std::optional<Event> pop(std::chrono::milliseconds timeout);
    // Everything queued now (with a DropReport first when drops are unreported); never waits.
    std::vector<Event> drain();
    // After close() pushes are ignored and waiting pops return once the queue is empty.
    void close();
    bool closed() const;
    EventStreamStats stats() const;

  private:
    static bool is_snapshot(const Event& e);
    bool keep_snapshot_locked();
    std::optional<Event> take_locked();

    const size_t max_snapshots_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Event> queue_;
    size_t pending_snapshots_ = 0;
    uint64_t offered_under_pressure_ = 0;  // snapshots offered while decimating (for parity)
    DropReport unreported_;
    EventStreamStats stats_;
    bool closed_ = false;
};

}  // namespace fluoro
