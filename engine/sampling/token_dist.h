// A sparse probability distribution over token ids: what a sampler would draw from after all its
// transforms (penalties, top-k, top-p, min-p, temperature). Speculative verification compares the
// target's and the drafter's distributions in this form, so both get the same transforms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fluoro {

struct TokenDist {
    std::vector<int32_t> ids;   // the support, in the sampler's draw order
    std::vector<double> probs;  // > 0, summing to 1 (within rounding)

    // Probability of `id` (0 outside the support). Linear in the support size.
    double prob(int32_t id) const;
    // A point mass on `id` (greedy picks, prompt-lookup drafts).
    static TokenDist point(int32_t id);
};

}  // namespace fluoro
