#include "telemetry/event_stream.h"

#include <algorithm>

namespace fluoro {

EventStream::EventStream(size_t max_pending_snapshots)
    : max_snapshots_(std::max<size_t>(2, max_pending_snapshots)) {}

bool EventStream::is_snapshot(const Event& e) {
    return std::holds_alternative<std::shared_ptr<const AttentionSnapshot>>(e) ||
           std::holds_alternative<std::shared_ptr<const KvSnapshot>>(e);
}

bool EventStream::keep_snapshot_locked() {
    if (pending_snapshots_ >= max_snapshots_) return false;
    if (pending_snapshots_ < max_snapshots_ / 2) {
        offered_under_pressure_ = 0;
        return true;
    }
    return offered_under_pressure_++ % 2 == 0;  // decimate: keep every other one
}

void EventStream::push(Event e, bool wake) {
    {
        std::lock_guard lock(mu_);
        if (closed_) return;
        if (is_snapshot(e)) {
            if (!keep_snapshot_locked()) {
                const bool attention =
                    std::holds_alternative<std::shared_ptr<const AttentionSnapshot>>(e);
                (attention ? unreported_.attention : unreported_.kv)++;
                (attention ? stats_.dropped_attention : stats_.dropped_kv)++;
                return;
            }
            ++pending_snapshots_;
        }
        queue_.push_back(std::move(e));
        ++stats_.pushed;
    }
    if (wake) cv_.notify_one();
}

void EventStream::wake() {
    cv_.notify_one();
}

std::optional<Event> EventStream::take_locked() {
    if (unreported_.attention > 0 || unreported_.kv > 0) {
        DropReport r = unreported_;
        r.total_attention = stats_.dropped_attention;
        r.total_kv = stats_.dropped_kv;
        unreported_ = {};
        return Event(r);
    }
    if (queue_.empty()) return std::nullopt;
    Event e = std::move(queue_.front());
    queue_.pop_front();
    if (is_snapshot(e)) --pending_snapshots_;
    return e;
}

std::optional<Event> EventStream::pop(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] {
        return closed_ || !queue_.empty() || unreported_.attention > 0 || unreported_.kv > 0;
    });
    return take_locked();
}

std::vector<Event> EventStream::drain() {
    std::lock_guard lock(mu_);
    std::vector<Event> out;
    out.reserve(queue_.size() + 1);
    while (auto e = take_locked()) out.push_back(std::move(*e));
    return out;
}

void EventStream::close() {
    {
        std::lock_guard lock(mu_);
        closed_ = true;
    }
    cv_.notify_all();
}

bool EventStream::closed() const {
    std::lock_guard lock(mu_);
    return closed_;
}

EventStreamStats EventStream::stats() const {
    std::lock_guard lock(mu_);
    EventStreamStats s = stats_;
    s.pending = queue_.size();
    s.pending_snapshots = pending_snapshots_;
    return s;
}

}  // namespace fluoro
