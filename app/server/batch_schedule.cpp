#include "server/batch_schedule.h"

namespace fluoro::app {

BatchSchedule::BatchSchedule(int64_t n_slots, size_t capacity)
    : n_slots_(n_slots), capacity_(capacity), origin_(std::chrono::steady_clock::now()) {}

void BatchSchedule::step(const BatchStep& s, const BatchLoad& l) {
    ScheduleStep r;
    r.index = s.index;
    r.start_ms = std::chrono::duration<double, std::milli>(s.started - origin_).count();
    r.end_ms = r.start_ms + s.ms;
    r.parts.reserve(s.parts.size());
    for (const BatchStepPart& p : s.parts)
        r.parts.push_back({p.tag, p.slot, p.tokens, p.prefill, p.kv_tokens});
    r.running = l.running;
    r.waiting = l.waiting;
    r.kv_used_bytes = l.kv_used_bytes;
    r.kv_bytes = l.kv_bytes;
    std::lock_guard lock(mu_);
    pending_.push_back(std::move(r));
    if (pending_.size() > capacity_) pending_.pop_front();  // nobody took them: the oldest go
    ++recorded_;
}

std::vector<ScheduleStep> BatchSchedule::take() {
    std::lock_guard lock(mu_);
    std::vector<ScheduleStep> out(std::make_move_iterator(pending_.begin()),
                                  std::make_move_iterator(pending_.end()));
    pending_.clear();
    return out;
}

int64_t BatchSchedule::steps_recorded() const {
    std::lock_guard lock(mu_);
    return recorded_;
}

}  // namespace fluoro::app
