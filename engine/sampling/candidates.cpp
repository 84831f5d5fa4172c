#include "sampling/candidates.h"

#include <algorithm>
#include <array>
#include <limits>

namespace fluoro::sampling {

size_t select_top(std::span<const float> logits, size_t k, std::span<Candidate> out) {
    const size_t n = logits.size();
    k = std::min(k, n);
    if (k == 0) return 0;
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();

    if (k * 8 >= n) {
        // Large k: a partition of everything beats keeping a heap.
        size_t m = 0;
        for (size_t i = 0; i < n; ++i)
            if (logits[i] > kNegInf) out[m++] = {static_cast<int32_t>(i), logits[i]};
        const size_t kept = std::min(k, m);
        if (kept < m)
            std::nth_element(out.begin(), out.begin() + kept, out.begin() + m, more_likely);
        std::sort(out.begin(), out.begin() + kept, more_likely);
        return kept;
    }

    // Small k: one pass keeping the k best in a heap whose top (out[0]) is the least likely kept.
    // Ids arrive in increasing order, so a tie with the top is never better: compare with `>`.
    const auto heap = out.first(k);
    size_t size = 0;
    size_t i = 0;
    for (; i < n && size < k; ++i) {
        if (logits[i] > kNegInf) {
            heap[size++] = {static_cast<int32_t>(i), logits[i]};
            std::push_heap(heap.begin(), heap.begin() + size, more_likely);
        }
    }
    float threshold = size == k ? heap[0].logit : kNegInf;
    for (; i < n; ++i) {
        if (logits[i] > threshold) {
            std::pop_heap(heap.begin(), heap.end(), more_likely);
            heap[k - 1] = {static_cast<int32_t>(i), logits[i]};
            std::push_heap(heap.begin(), heap.end(), more_likely);
            threshold = heap[0].logit;
        }
    }
    std::sort(heap.begin(), heap.begin() + size, more_likely);
    return size;
}

size_t sort_until_mass(std::span<Candidate> c, std::span<const float> weight_by_id, double target) {
    const size_t n = c.size();
    double cum = 0.0;
    size_t sorted = 0;
    size_t chunk = 64;
    while (sorted < n) {
        const size_t end = std::min(n, sorted + chunk);
        if (end < n) std::nth_element(c.begin() + sorted, c.begin() + end, c.end(), more_likely);
        std::sort(c.begin() + sorted, c.begin() + end, more_likely);
        for (size_t i = sorted; i < end; ++i) {
            cum += weight_by_id[c[i].id];
            if (cum >= target) return i + 1;
        }
        sorted = end;
        chunk *= 2;
    }
    return n;
}

size_t sort_until_mass_bucketed(std::span<Candidate> c, std::span<const float> weight_by_id,
                                float max_logit, double target) {
    constexpr size_t kBuckets = 2048;
    constexpr float kPerUnit = 64.0f;  // bucket width: 1/64 of a logit; the last one is open
    const auto bucket_of = [&](float logit) {
        const float f = (max_logit - logit) * kPerUnit;
        return f < static_cast<float>(kBuckets - 1) ? static_cast<size_t>(f) : kBuckets - 1;
    };
    std::array<double, kBuckets> mass{};
    for (const Candidate& x : c) mass[bucket_of(x.logit)] += weight_by_id[x.id];
    size_t last = kBuckets - 1;
    double cum = 0.0;
    for (size_t b = 0; b < kBuckets; ++b) {
        cum += mass[b];
        if (cum >= target) {
            last = b;
            break;
        }
    }
    // Buckets are monotonic in the logit, so everything up to `last` is a most-likely prefix of
    // c. One bucket more absorbs the different summation order of the exact walk below.
    const size_t limit = std::min(last + 1, kBuckets - 1);
    const auto mid = std::partition(
        c.begin(), c.end(), [&](const Candidate& x) { return bucket_of(x.logit) <= limit; });
    const auto head = c.first(static_cast<size_t>(mid - c.begin()));
    std::sort(head.begin(), head.end(), more_likely);
    double exact = 0.0;
    for (size_t i = 0; i < head.size(); ++i) {
        exact += weight_by_id[head[i].id];
        if (exact >= target) return i + 1;
    }
    if (head.size() == c.size()) return c.size();
    return sort_until_mass(c, weight_by_id, target);  // rounding at a bucket edge: rare
}

}  // namespace fluoro::sampling
