#include "eval/kv_scaling.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "core/error.h"
#include "decode/sequence.h"
#include "model/model.h"

namespace fluoro {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

double loglog_slope(std::span<const double> x, std::span<const double> y) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int n = 0;
    for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
        if (x[i] <= 0 || y[i] <= 0) continue;
        const double lx = std::log(x[i]), ly = std::log(y[i]);
        sx += lx;
        sy += ly;
        sxx += lx * lx;
        sxy += lx * ly;
        ++n;
    }
    const double d = n * sxx - sx * sx;
    return n < 2 || d <= 0 ? 0 : (n * sxy - sx * sy) / d;
}

KvScalingResult measure_kv_scaling(Model& model, KvCache& kv, std::span<const int32_t> text,
                                   std::span<const int64_t> positions, int reps) {
    if (positions.empty()) throw Error("kv scaling: no positions to measure");
    if (reps < 1) throw Error("kv scaling: reps must be at least 1");
    for (size_t i = 0; i < positions.size(); ++i) {
        if (positions[i] < 1 || positions[i] >= int64_t(text.size()))
            throw Error("kv scaling: position " + std::to_string(positions[i]) +
                        " is outside the text's " + std::to_string(text.size()) + " tokens");
        if (i > 0 && positions[i] <= positions[i - 1])
            throw Error("kv scaling: positions must ascend");
        if (positions[i] + 1 > kv.capacity(0))
            throw Error("kv scaling: position " + std::to_string(positions[i]) +
                        " does not fit the KV cache's " + std::to_string(kv.capacity(0)) +
                        " tokens");
    }
    Sequence seq(model, kv, 0);
    KvScalingResult r;
    std::vector<float> cached_logits, recomputed_logits;
    for (const int64_t n : positions) {
        KvScalingPoint p;
        p.position = n;
        // With the cache: n tokens cached, then the next one decoded, its row dropped and
        // decoded again for each repetition (plus one warm-up).
        seq.reset();
        seq.prefill(text.first(size_t(n)));
        std::vector<double> cached;
        for (int i = 0; i <= reps; ++i) {
            seq.truncate(n);
            const auto t = Clock::now();
            const std::span<const float> logits = seq.decode(text[size_t(n)]);
            if (i > 0) cached.push_back(ms_since(t));
            if (i == reps) cached_logits.assign(logits.begin(), logits.end());
        }
        p.cached_ms = median(cached);
        // Without: the cache emptied and the whole prefix plus the token computed again.
        std::vector<double> recomputed;
        for (int i = 0; i <= reps; ++i) {
            seq.reset();
            const auto t = Clock::now();
            const std::span<const float> logits = seq.prefill(text.first(size_t(n) + 1));
            if (i > 0) recomputed.push_back(ms_since(t));
            if (i == reps) recomputed_logits.assign(logits.begin(), logits.end());
        }
        p.recompute_ms = median(recomputed);
        r.points.push_back(p);
    }
    for (size_t i = 0; i < cached_logits.size() && i < recomputed_logits.size(); ++i)
        r.max_logit_diff =
            std::max(r.max_logit_diff, std::fabs(cached_logits[i] - recomputed_logits[i]));
    std::vector<double> x, yc, yr;
    for (const KvScalingPoint& p : r.points) {
        x.push_back(double(p.position));
        yc.push_back(p.cached_ms);
        yr.push_back(p.recompute_ms);
    }
    r.cached_slope = loglog_slope(x, yc);
    r.recompute_slope = loglog_slope(x, yr);
    return r;
}

}  // namespace fluoro
