#include "session/expert_load.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "core/error.h"

namespace fluoro::app {

void ExpertLoad::add(const ExpertRouting* r) {
    if (!r || r->n_tokens == 0) return;
    if (const std::string why = expert_routing_error(*r); !why.empty())
        throw Error("expert routing: " + why);
    if (tokens_ == 0 && counts_.empty()) {
        n_layer_ = r->n_layer, n_expert_ = r->n_expert, n_used_ = r->n_used;
        counts_.assign(size_t(n_layer_) * size_t(n_expert_), 0);
    } else if (r->n_layer != n_layer_ || r->n_expert != n_expert_ || r->n_used != n_used_) {
        throw Error("expert routing: a step of " + std::to_string(r->n_layer) + " layers x " +
                    std::to_string(r->n_expert) + " experts after steps of " +
                    std::to_string(n_layer_) + " x " + std::to_string(n_expert_));
    }
    for (int32_t il = 0; il < n_layer_; ++il)
        for (int64_t t = 0; t < r->n_tokens; ++t)
            for (int32_t j = 0; j < n_used_; ++j) {
                const int32_t e = r->expert(il, t, j);
                if (e >= 0) ++counts_[size_t(il) * size_t(n_expert_) + size_t(e)];  // -1: skipped
            }
    tokens_ += r->n_tokens;
}

void ExpertLoad::add(const Event& e) {
    if (const auto* s = std::get_if<StepEvent>(&e)) add(s->experts.get());
}

std::string ExpertLoad::format(int shown) const {
    if (empty()) return "experts: no routing recorded\n";
    std::string out = "experts: " + std::to_string(tokens_) + " tokens, " +
                      std::to_string(n_used_) + " of " + std::to_string(n_expert_) +
                      " experts each, per layer (busiest / even load, then each expert's share "
                      "of the layer's choices)\n";
    const int32_t n_show = shown > 0 ? std::min(shown, n_expert_) : n_expert_;
    std::vector<int32_t> order(static_cast<size_t>(n_expert_));
    char buf[64];
    for (int32_t il = 0; il < n_layer_; ++il) {
        int64_t total = 0;
        for (int32_t e = 0; e < n_expert_; ++e) total += count(il, e);
        if (total == 0) {  // a layer that routed nothing: deepseek2's leading dense layers
            std::snprintf(buf, sizeof buf, "layer %3d:  dense (no experts)\n", il);
            out += buf;
            continue;
        }
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int32_t a, int32_t b) { return count(il, a) > count(il, b); });
        const double even = double(total) / double(n_expert_);
        std::snprintf(buf, sizeof buf, "layer %3d: %5.2fx ", il,
                      even > 0 ? double(count(il, order[0])) / even : 0.0);
        out += buf;
        for (int32_t i = 0; i < n_show; ++i) {
            const int32_t e = order[size_t(i)];
            std::snprintf(buf, sizeof buf, " e%d %.0f%%", e,
                          total > 0 ? 100.0 * double(count(il, e)) / double(total) : 0.0);
            out += buf;
        }
        if (n_show < n_expert_) out += " ...";
        out += '\n';
    }
    return out;
}

}  // namespace fluoro::app
