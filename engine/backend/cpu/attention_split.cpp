#include "backend/cpu/attention_split.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fluoro::cpu {
namespace {

// Fewest keys worth a task of their own in a split decode step.
constexpr int64_t kMinKeysPerSplit = 64;

}  // namespace

KeyRange key_range(const AttentionParams& p, int64_t pos) {
    const int64_t lo = p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0;
    return {lo, pos - lo + 1};
}

int64_t choose_split(const AttentionParams& p, const Batch& batch, int threads) {
    const int64_t pairs = batch.size() * p.n_head_kv;
    const int64_t want_tasks = 4 * int64_t(threads);
    if (threads <= 1 || pairs >= want_tasks) return 1;
    int64_t max_keys = 0;
    for (int64_t t = 0; t < batch.size(); ++t)
        max_keys = std::max(max_keys, key_range(p, batch.positions[size_t(t)]).count);
    return std::clamp(max_keys / kMinKeysPerSplit, int64_t{1}, (want_tasks + pairs - 1) / pairs);
}

SplitRange split_range(KeyRange keys, int64_t split, int64_t c) {
    const int64_t per_range = (keys.count + split - 1) / split;
    const int64_t begin = keys.first + std::min(keys.count, c * per_range);
    const int64_t n = std::min(keys.first + keys.count, begin + per_range) - begin;
    return {begin, std::max<int64_t>(0, n)};
}

void merge_partials(const AttentionParams& p, const Batch& batch, int64_t split,
                    const float* partial, Act out, std::span<float> lse) {
    const int64_t group = p.n_head / p.n_head_kv, dv = p.head_dim_v;
    for (int64_t t = 0; t < batch.size(); ++t) {
        for (int64_t h = 0; h < p.n_head; ++h) {
            const int64_t kvh = h / group, g = h % group;
            const auto at = [&](int64_t c) {
                return partial + partial_offset(p, split, t, kvh, c, g);
            };
            float m = -std::numeric_limits<float>::infinity();
            for (int64_t c = 0; c < split; ++c)
                if (at(c)[1] > 0) m = std::max(m, at(c)[0]);
            double total = 0;
            for (int64_t c = 0; c < split; ++c)
                if (at(c)[1] > 0) total += double(at(c)[1]) * std::exp(double(at(c)[0] - m));
            float* o = out.data + t * out.width + h * dv;
            std::fill(o, o + dv, 0.0f);
            lse[size_t(t * p.n_head + h)] = total > 0 ? float(double(m) + std::log(total)) : m;
            for (int64_t c = 0; c < split; ++c) {
                const float* part = at(c);
                if (part[1] <= 0) continue;
                const auto w = float(double(part[1]) * std::exp(double(part[0] - m)) / total);
                for (int64_t d = 0; d < dv; ++d) o[d] += w * part[2 + d];
            }
        }
    }
}

}  // namespace fluoro::cpu
