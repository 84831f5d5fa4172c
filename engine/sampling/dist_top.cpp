#include "sampling/dist_top.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace fluoro {

DistTop dist_top(std::span<const float> logits, int32_t top_k, int32_t target) {
    DistTop out;
    if (logits.empty()) return out;
    const float max = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (const float l : logits) sum += std::exp(double(l - max));
    const double log_z = double(max) + std::log(sum);
    for (const float l : logits) {
        const double lp = double(l) - log_z;
        out.entropy -= std::exp(lp) * lp;
    }
    const auto before = [&](int32_t a, int32_t b) {
        return logits[size_t(a)] > logits[size_t(b)] ||
               (logits[size_t(a)] == logits[size_t(b)] && a < b);
    };
    std::vector<int32_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    const size_t k = std::min(order.size(), size_t(std::max(1, top_k)));
    std::partial_sort(order.begin(), order.begin() + ptrdiff_t(k), order.end(), before);
    for (size_t i = 0; i < k; ++i)
        out.top.push_back({order[i], float(double(logits[size_t(order[i])]) - log_z)});
    if (target >= 0 && size_t(target) < logits.size()) {
        out.target_logprob = float(double(logits[size_t(target)]) - log_z);
        out.target_rank = 0;
        for (size_t i = 0; i < logits.size(); ++i)
            if (before(int32_t(i), target)) ++out.target_rank;
    }
    return out;
}

}  // namespace fluoro
