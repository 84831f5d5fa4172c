// Selecting and ordering sampling candidates without sorting the whole vocabulary: the k best
// logits in one streaming pass, and an incremental sort that stops as soon as a most-likely prefix
// holds enough probability (what top-p needs). The order is total (higher logit first, then lower
// id), so results do not depend on the standard library's sort or heap internals.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace fluoro::sampling {

struct Candidate {
    int32_t id;
    float logit;
};

// The sampler's order: a before b when a is more likely, ties broken by the lower id.
inline bool more_likely(const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Writes the k most likely tokens of `logits` (ids are indices) to out[0..), sorted by
// more_likely, and returns how many were written: min(k, number of logits above -inf). -inf logits
// (banned tokens) are never selected. `out` must hold max(k, logits.size()) entries (scratch).
size_t select_top(std::span<const float> logits, size_t k, std::span<Candidate> out);

// Sorts c by more_likely only as far as needed: returns the length n of the shortest sorted prefix
// whose weights (weight_by_id[candidate.id], summed in order) reach `target`, or c.size() if the
// whole set sums to less. c[0..n) is then sorted and holds the n most likely candidates; the rest
// is unordered. Cost: O(c.size() * log(n)) rather than a full sort.
size_t sort_until_mass(std::span<Candidate> c, std::span<const float> weight_by_id, double target);

// Same contract as sort_until_mass, faster on large sets (e.g. the whole vocabulary under top-p):
// a histogram of the logits (max_logit - logit in 1/64 steps) finds which logits can be in the
// prefix, and only those are sorted. `max_logit` must be >= every candidate's logit.
size_t sort_until_mass_bucketed(std::span<Candidate> c, std::span<const float> weight_by_id,
                                float max_logit, double target);

}  // namespace fluoro::sampling
