// Verifying drafted tokens against the target model (Leviathan et al. 2211.17192, Algorithm 1;
// notation: p = target, q = drafter). Pure functions over the distributions both models gave at
// each drafted position, so the rule is tested apart from any model:
//   greedy:  accept while the draft equals the target's pick; the next token is the target's
//            pick at the first mismatch, or its pick after the last draft (the bonus).
//   sampled: accept x_i with probability min(1, p_i(x_i) / q_i(x_i)); at the first rejection draw
//            from normalize(max(0, p_i - q_i)); when all are accepted draw a bonus from p_{n+1}.
// With p and q produced by the same sampling transforms (Sampler::distribution), the emitted
// tokens are distributed exactly as plain sampling from the target.
#pragma once

#include <cstdint>
#include <span>

#include "sampling/sampler.h"
#include "sampling/token_dist.h"

namespace fluoro::spec {

enum class NextKind { Resampled, Bonus };

struct Verdict {
    int32_t accepted = 0;  // drafted tokens accepted, 0..n_draft
    int32_t next = -1;     // the token emitted after them (always one)
    NextKind kind = NextKind::Bonus;
};

// target_pick[i] is the target's greedy pick after draft[0..i) (draft.size() + 1 entries).
Verdict verify_greedy(std::span<const int32_t> draft, std::span<const int32_t> target_pick);

// q[i]: the drafter's distribution draft[i] was drawn from (draft.size() entries); p[i]: the
// target's distribution after draft[0..i) (draft.size() + 1 entries). Random numbers come from
// `rng`'s stream (one per tested token, one per draw). Throws fluoro::Error on mismatched sizes
// or a draft token the drafter gave probability 0.
Verdict verify_sampled(std::span<const int32_t> draft, std::span<const TokenDist> q,
                       std::span<const TokenDist> p, Sampler& rng);

// normalize(max(0, p - q)) over p's support (where the residual is positive). When rounding
// leaves no mass (p == q), returns p itself: a rejection then has probability 0 anyway.
TokenDist residual(const TokenDist& p, const TokenDist& q);

}  // namespace fluoro::spec
