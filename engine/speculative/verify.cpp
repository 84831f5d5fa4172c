#include "speculative/verify.h"

#include <string>

#include "core/error.h"

namespace fluoro::spec {

Verdict verify_greedy(std::span<const int32_t> draft, std::span<const int32_t> target_pick) {
    if (target_pick.size() != draft.size() + 1)
        throw Error("speculative: " + std::to_string(target_pick.size()) + " target picks for " +
                    std::to_string(draft.size()) + " drafted tokens (need one more than drafted)");
    Verdict v;
    while (size_t(v.accepted) < draft.size() &&
           draft[size_t(v.accepted)] == target_pick[size_t(v.accepted)])
        ++v.accepted;
    v.next = target_pick[size_t(v.accepted)];
    v.kind = size_t(v.accepted) == draft.size() ? NextKind::Bonus : NextKind::Resampled;
    return v;
}

TokenDist residual(const TokenDist& p, const TokenDist& q) {
    TokenDist r;
    double total = 0.0;
    for (size_t i = 0; i < p.ids.size(); ++i) {
        const double d = p.probs[i] - q.prob(p.ids[i]);
        if (d > 0.0) {
            r.ids.push_back(p.ids[i]);
            r.probs.push_back(d);
            total += d;
        }
    }
    if (!(total > 0.0)) return p;
    for (double& x : r.probs) x /= total;
    return r;
}

Verdict verify_sampled(std::span<const int32_t> draft, std::span<const TokenDist> q,
                       std::span<const TokenDist> p, Sampler& rng) {
    if (q.size() != draft.size() || p.size() != draft.size() + 1)
        throw Error("speculative: " + std::to_string(draft.size()) + " drafted tokens need as " +
                    "many drafter distributions and one more target distribution; got " +
                    std::to_string(q.size()) + " and " + std::to_string(p.size()));
    Verdict v;
    for (size_t i = 0; i < draft.size(); ++i) {
        const double qx = q[i].prob(draft[i]);
        if (!(qx > 0.0))
            throw Error("speculative: drafted token " + std::to_string(draft[i]) + " at position " +
                        std::to_string(i) + " has drafter probability 0");
        const double px = p[i].prob(draft[i]);
        // Accept with probability min(1, px / qx): u < px / qx with u uniform in [0, 1).
        if (rng.uniform01() * qx < px) {
            ++v.accepted;
            continue;
        }
        v.next = rng.draw_from(residual(p[i], q[i]));
        v.kind = NextKind::Resampled;
        return v;
    }
    v.next = rng.draw_from(p[draft.size()]);
    v.kind = NextKind::Bonus;
    return v;
}

}  // namespace fluoro::spec
