#include "telemetry/step_meter.h"

#include <algorithm>

namespace fluoro {

StepMeter::StepMeter(const ProfilingBackend& backend, Clock::time_point run_start)
    : backend_(backend), run_start_(run_start) {
    restart();
}

int64_t StepMeter::now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - run_start_).count();
}

int64_t StepMeter::backend_ns_in_step() const {
    int64_t sum = 0;
    for (size_t i = 0; i < kTimeCategories; ++i) sum += backend_.totals()[i] - base_[i];
    return sum;
}

StepEvent StepMeter::close(uint64_t run, int64_t index, StepPhase phase, int64_t tokens,
                           bool split) {
    StepEvent s;
    s.run = run;
    s.index = index;
    s.phase = phase;
    s.tokens = tokens;
    s.start_ns = step_start_ns_;
    s.end_ns = std::max(now_ns(), s.start_ns);
    if (split) {
        int64_t backend_sum = 0;
        for (size_t i = 0; i < kTimeCategories; ++i) {
            s.op_ns[i] = backend_.totals()[i] - base_[i];
            backend_sum += s.op_ns[i];
        }
        s.op_ns[size_t(TimeCategory::Sampling)] =
            std::max<int64_t>(0, (s.end_ns - s.start_ns) - backend_sum);
    }
    step_start_ns_ = s.end_ns;
    base_ = backend_.totals();
    return s;
}

void StepMeter::restart() {
    step_start_ns_ = now_ns();
    base_ = backend_.totals();
}

}  // namespace fluoro
