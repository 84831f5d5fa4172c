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

std::string expert_routing_error(const ExpertRouting& r) {
    if (r.n_layer <= 0 || r.n_expert <= 0 || r.n_used <= 0 || r.n_used > r.n_expert ||
        r.n_tokens < 0)
        return std::to_string(r.n_layer) + " layers, " + std::to_string(r.n_expert) + " experts, " +
               std::to_string(r.n_used) + " used per token, " + std::to_string(r.n_tokens) +
               " tokens";
    const size_t cells = size_t(r.n_layer) * size_t(r.n_tokens) * size_t(r.n_used);
    if (r.experts.size() != cells || r.weights.size() != cells)
        return std::to_string(r.experts.size()) + " choices and " +
               std::to_string(r.weights.size()) + " weights for " + std::to_string(r.n_layer) +
               " layers x " + std::to_string(r.n_tokens) + " tokens x " + std::to_string(r.n_used) +
               " experts";
    for (const int32_t e : r.experts)
        if (e < -1 || e >= r.n_expert)
            return "expert " + std::to_string(e) + " of " + std::to_string(r.n_expert);
    return {};
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

RunFinished finished_without_run(std::string stop, std::string error) {
    RunFinished f;
    f.stop = std::move(stop);
    f.error = std::move(error);
    return f;
}

}  // namespace fluoro
