#include "kv/kv_policy.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace fluoro {
namespace {

// Picks `count` slots of [begin, end) by score: the highest scores (or the lowest, for
// `lowest`), ties broken towards the more recent slot. Returns them ascending.
std::vector<int64_t> pick(std::span<const float> score, int64_t begin, int64_t end, int64_t count,
                          bool lowest) {
    std::vector<int64_t> idx(size_t(end - begin));
    std::iota(idx.begin(), idx.end(), begin);
    count = std::clamp<int64_t>(count, 0, end - begin);
    const auto better = [&](int64_t a, int64_t b) {
        const float sa = score[size_t(a)], sb = score[size_t(b)];
        if (sa != sb) return lowest ? sa < sb : sa > sb;
        return a > b;
    };
    std::partial_sort(idx.begin(), idx.begin() + count, idx.end(), better);
    idx.resize(size_t(count));
    std::sort(idx.begin(), idx.end());
    return idx;
}

// SnapKV's clustering step: each slot's score becomes the mean over a window of `kernel` slots
// centred on it (1-D average pooling, as the SnapKV repository does), so the neighbours of a
// strongly attended token are kept with it.
std::vector<float> avg_pool(std::span<const float> x, int64_t kernel) {
    const int64_t n = int64_t(x.size()), half = std::max<int64_t>(kernel, 1) / 2;
    std::vector<float> y(x.size());
    for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        const int64_t lo = std::max<int64_t>(0, j - half), hi = std::min(n - 1, j + half);
        for (int64_t i = lo; i <= hi; ++i) sum += x[size_t(i)];
        y[size_t(j)] = float(sum / double(hi - lo + 1));
    }
    return y;
}

// "window, streaming, h2o, scissorhands, snapkv": the policies that evict, for the full policy's
// error.
std::string evicting_policy_names() {
    std::string out;
    for (const KvPolicyInfo& p : kv_policies()) {
        if (!p.evicts) continue;
        if (!out.empty()) out += ", ";
        out += p.name;
    }
    return out;
}

}  // namespace

std::string_view kv_keep_reason_name(KvKeepReason r) {
    switch (r) {
        case KvKeepReason::Sink:
            return "sink";
        case KvKeepReason::Recent:
            return "recent";
        case KvKeepReason::Heavy:
            return "heavy";
        case KvKeepReason::Evicted:
            return "evicted";
    }
    return "?";
}

int64_t KvPolicyConfig::effective_budget(int64_t n_ctx) const {
    return budget > 0 ? std::min(budget, n_ctx) : n_ctx;
}

int64_t KvPolicyConfig::effective_recent(int64_t n_ctx) const {
    const int64_t b = effective_budget(n_ctx);
    const KvPolicyInfo& info = kv_policy_info(kind);
    if (info.recent_setting && recent > 0) return std::min(recent, b);
    return info.default_recent(b, observe);
}

int64_t KvPolicyConfig::effective_chunk(int64_t n_ctx) const {
    const int64_t b = effective_budget(n_ctx);
    return evict_chunk > 0 ? std::min(evict_chunk, b / 2) : std::max<int64_t>(1, b / 16);
}

std::string KvPolicyConfig::problem(int64_t n_ctx) const {
    const std::string name(kv_policy_name(kind));
    if (budget < 0) return "the KV budget must be >= 0 tokens (0 = the whole context)";
    if (budget > n_ctx)
        return "the KV budget of " + std::to_string(budget) + " tokens exceeds the context of " +
               std::to_string(n_ctx);
    if (sinks < 0 || recent < 0 || history < 0 || evict_chunk < 0 || observe < 1 || pool < 1)
        return "KV policy " + name +
               ": sinks, recent, history and chunk must be >= 0, observe "
               "and pool >= 1";
    if (kind == KvPolicyKind::Full) return "";
    const int64_t b = effective_budget(n_ctx);
    if (b < 8) return "KV policy " + name + " needs a budget of at least 8 tokens";
    const int64_t s = kv_policy_info(kind).uses_sinks ? sinks : 0;
    if (s + 2 > b / 2)
        return "KV policy " + name + ": " + std::to_string(s) +
               " sink tokens leave no room in a "
               "budget of " +
               std::to_string(b) + " (keep sinks below a quarter of it)";
    return "";
}

std::optional<KvDecision> kv_decide(const KvPolicyConfig& policy, int64_t n_ctx,
                                    const KvPolicyInput& in) {
    // SnapKV selects once, at the end of a prefill, from what the observation window saw; any
    // later eviction (decode past the budget) is h2o's, with h2o's defaults.
    KvPolicyConfig cfg = policy;
    if (cfg.kind == KvPolicyKind::SnapKV && in.observed.empty()) cfg.kind = KvPolicyKind::H2O;
    const int64_t budget = cfg.effective_budget(n_ctx);
    if (in.length < 0 || in.incoming < 0) throw Error("KV policy: negative length");
    if (in.length + in.incoming <= budget) return std::nullopt;
    const std::string name(kv_policy_name(cfg.kind));
    if (cfg.kind == KvPolicyKind::Full)
        throw Error("the KV cache is full: " + std::to_string(in.length) + " tokens cached + " +
                    std::to_string(in.incoming) + " new exceed the budget of " +
                    std::to_string(budget) +
                    "; raise the context or choose an evicting KV policy (" +
                    evicting_policy_names() + ")");
    if (std::string p = cfg.problem(n_ctx); !p.empty()) throw Error(p);
    const int64_t free_at_least = std::max(in.incoming, cfg.effective_chunk(n_ctx));
    if (in.incoming > budget / 2)
        throw Error("KV policy " + name + ": " + std::to_string(in.incoming) +
                    " tokens at once exceed half the budget of " + std::to_string(budget));
    const int64_t target = std::min(in.length, std::max<int64_t>(0, budget - free_at_least));

    // Sinks first, then the recent window, then the policy's pick from the middle.
    const int64_t sinks =
        kv_policy_info(cfg.kind).uses_sinks ? std::min<int64_t>(cfg.sinks, target) : 0;
    const int64_t recent = std::min(cfg.effective_recent(n_ctx), target - sinks);
    const int64_t heavy = target - sinks - recent;
    const int64_t mid_begin = sinks, mid_end = in.length - recent;

    std::vector<int64_t> picked;
    if (heavy > 0) {
        std::span<const float> score;
        bool lowest = false;
        std::vector<float> pooled;
        switch (cfg.kind) {
            case KvPolicyKind::SnapKV:
                if (!in.observed.empty()) {
                    pooled = avg_pool(in.observed, cfg.pool);
                    score = pooled;
                    break;
                }
                [[fallthrough]];  // after the prefill: accumulated attention, as h2o
            case KvPolicyKind::H2O:
                score = in.attention;
                break;
            case KvPolicyKind::Scissorhands:
                score = in.low_count;  // fewest "below average" steps first
                lowest = true;
                break;
            default:
                break;
        }
        if (int64_t(score.size()) < in.length)
            throw Error("KV policy " + name + " needs attention scores for the " +
                        std::to_string(in.length) +
                        " cached tokens (turn on the attention "
                        "statistics: AttentionCapture::stats)");
        picked = pick(score, mid_begin, mid_end, heavy, lowest);
    }

    KvDecision d;
    d.keep.reserve(size_t(target));
    for (int64_t j = 0; j < sinks; ++j) {
        d.keep.push_back(j);
        d.reasons.push_back(KvKeepReason::Sink);
    }
    for (int64_t j : picked) {
        d.keep.push_back(j);
        d.reasons.push_back(KvKeepReason::Heavy);
    }
    for (int64_t j = mid_end; j < in.length; ++j) {
        d.keep.push_back(j);
        d.reasons.push_back(KvKeepReason::Recent);
    }
    size_t k = 0;
    for (int64_t j = 0; j < in.length; ++j) {
        if (k < d.keep.size() && d.keep[k] == j)
            ++k;
        else
            d.evicted.push_back(j);
    }
    return d;
}

void kv_update_low_count(std::span<float> low, std::span<const float> step_attention,
                         int64_t history) {
    const size_t n = std::min(low.size(), step_attention.size());
    if (n == 0) return;
    double sum = 0;
    for (size_t j = 0; j < n; ++j) sum += step_attention[j];
    const float mean = float(sum / double(n));
    const float decay = 1.0f - 1.0f / float(std::max<int64_t>(history, 1));
    for (size_t j = 0; j < n; ++j)
        low[j] = low[j] * decay + (step_attention[j] < mean ? 1.0f : 0.0f);
}

}  // namespace fluoro
