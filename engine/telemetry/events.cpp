#include "telemetry/events.h"

namespace fluoro {

std::string_view run_kind_name(RunKind k) {
    switch (k) {
        case RunKind::Send:
            return "send";
        case RunKind::Regenerate:
            return "regenerate";
        case RunKind::Edit:
            return "edit";
    }
    return "unknown";
}

std::string_view step_phase_name(StepPhase p) {
    switch (p) {
        case StepPhase::Prefill:
            return "prefill";
        case StepPhase::Decode:
            return "decode";
        case StepPhase::Draft:
            return "draft";
        case StepPhase::Verify:
            return "verify";
    }
    return "unknown";
}

std::string_view kv_block_state_name(KvBlockState s) {
    switch (s) {
        case KvBlockState::Free:
            return "free";
        case KvBlockState::Used:
            return "used";
        case KvBlockState::Shared:
            return "shared";
        case KvBlockState::Sink:
            return "sink";
        case KvBlockState::Heavy:
            return "heavy";
        case KvBlockState::Evicted:
            return "evicted";
    }
    return "unknown";
}

namespace {

template <class T>
uint64_t run_of(const T& e) {
    if constexpr (requires { e.run; })
        return e.run;
    else if constexpr (requires { e->run; })
        return e->run;
    else
        return 0;
}

}  // namespace

uint64_t event_run(const Event& e) {
    return std::visit([](const auto& v) { return run_of(v); }, e);
}

}  // namespace fluoro
