// "The KV cache turns quadratic work into linear" (docs/CLAIMS.md, claim 1), measured: the cost
// of the next token at conversation length n with the cache (one decode step over the cached
// n tokens) against without it (the whole prefix through the model again — what an engine with no
// KV cache does for every token: the Sequence emptied, then n + 1 tokens prefilled). Per token
// the first grows slowly with n (attention reads n cached rows), the second about linearly (every
// layer's projections over n + 1 tokens), so over a generation of N tokens the totals grow as
// about N and N² — the slopes of log(ms) over log(n) say by how much on this machine.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace fluoro {

class Model;
class KvCache;

struct KvScalingPoint {
    int64_t position = 0;     // tokens before the one computed
    double cached_ms = 0;     // one decode step after n cached tokens (median)
    double recompute_ms = 0;  // prefill of n + 1 tokens into an empty cache (median)
};

struct KvScalingResult {
    std::vector<KvScalingPoint> points;
    // Least-squares slopes of log(ms) over log(position): per-token cost ~ n^slope, so the cost of
    // a whole generation grows as n^(slope + 1).
    double cached_slope = 0, recompute_slope = 0;
    // Largest |difference| between the logits of the last measured token computed both ways
    // (the cache changes the work, not the result).
    float max_logit_diff = 0;
};

// positions ascending, each < text.size(); the cache holds at least the largest + 1 tokens in
// sequence 0. Throws Error otherwise.
KvScalingResult measure_kv_scaling(Model& model, KvCache& kv, std::span<const int32_t> text,
                                   std::span<const int64_t> positions, int reps = 3);

// log-log least-squares slope of y over x (points with x, y > 0); 0 for fewer than two.
double loglog_slope(std::span<const double> x, std::span<const double> y);

}  // namespace fluoro
