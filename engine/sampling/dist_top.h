// The head of a next-token distribution read from raw logits: its k most probable tokens, its
// entropy, and one given token's log-probability and rank — what the logit lens
// (decode/logit_lens.h) reports for each layer.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/sampler.h"  // TokenProb

namespace fluoro {

struct DistTop {
    std::vector<TokenProb> top;  // the k most probable tokens, best first (ties: lower id first)
    double entropy = 0;          // of the whole softmax, in nats
    // The target token's log-probability and rank (0 = the most probable; tokens with an equal
    // logit and a lower id rank before it); rank -1 when no target was given.
    float target_logprob = 0;
    int64_t target_rank = -1;
};

// Softmax of `logits` (in double) read as above. top_k >= 1 (capped at the vocabulary);
// target -1: none, else an index into logits.
DistTop dist_top(std::span<const float> logits, int32_t top_k, int32_t target);

}  // namespace fluoro
