#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/run_errors.h"
#include "sampling/fast_exp.h"
#include "sampling/logit_kernels.h"

namespace fluoro {
namespace {

using sampling::Candidate;

constexpr float kInf = std::numeric_limits<float>::infinity();

std::string describe(float v) {
    if (std::isnan(v)) return "NaN";
    return v > 0 ? "+inf" : "-inf";
}

}  // namespace

Sampler::Sampler(const SamplingParams& params, int32_t n_vocab)
    : params_(params), n_vocab_(n_vocab), rng_(params.seed) {
    params_.validate();
    if (n_vocab <= 0)
        throw Error("sampler: vocabulary size " + std::to_string(n_vocab) + " must be > 0");
    const auto n = static_cast<size_t>(n_vocab);
    logits_.resize(n);
    weights_.resize(n);
    weights_t1_.resize(n);
    counts_.assign(n, 0);
    candidates_.resize(n);
}

void Sampler::reset(uint64_t seed) {
    params_.seed = seed;
    rng_.seed(seed);
}

void Sampler::set_params(const SamplingParams& params) {
    params.validate();
    params_ = params;
}

double Sampler::uniform01() {
    // 53 random bits -> [0, 1). Written out because std::uniform_real_distribution's output is not
    // specified bit-for-bit and differs between standard libraries; mt19937_64's stream is.
    return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

void Sampler::copy_checked(std::span<const float> logits) {
    std::copy(logits.begin(), logits.end(), logits_.begin());
    const size_t bad = sampling::find_nan_or_pos_inf(logits_);  // -inf (banned) is fine
    if (bad == logits_.size()) return;
    throw NonFiniteError("sampler: logit of token " + std::to_string(bad) + " is " +
                         describe(logits_[bad]) + " (the model produced a non-finite value)");
}

void Sampler::apply_penalties(std::span<const int32_t> history) {
    const SamplingParams& p = params_;
    const bool off =
        p.repeat_penalty == 1.0f && p.frequency_penalty == 0.0f && p.presence_penalty == 0.0f;
    if (off || p.repeat_last_n == 0 || history.empty()) return;
    size_t window = history.size();
    if (p.repeat_last_n > 0) window = std::min(window, static_cast<size_t>(p.repeat_last_n));
    const size_t first = history.size() - window;
    const auto recent = history.subspan(first);

    for (size_t i = 0; i < recent.size(); ++i) {
        if (recent[i] < 0 || recent[i] >= n_vocab_) {
            throw Error("sampler: history token at position " + std::to_string(first + i) +
                        " has id " + std::to_string(recent[i]) + ", outside the vocabulary [0, " +
                        std::to_string(n_vocab_) + ")");
        }
    }
    for (int32_t t : recent) ++counts_[t];
    // Each distinct token once, in llama.cpp's arithmetic; counts_ is zeroed again on the way.
    for (int32_t t : recent) {
        const int32_t count = counts_[t];
        if (count == 0) continue;
        counts_[t] = 0;
        float& logit = logits_[t];
        if (logit <= 0.0f) {
            logit *= p.repeat_penalty;
        } else {
            logit /= p.repeat_penalty;
        }
        logit -= static_cast<float>(count) * p.frequency_penalty + p.presence_penalty;
        if (!(logit < kInf)) {
            for (int32_t u : recent) counts_[u] = 0;
            std::ostringstream s;
            s << "sampler: the penalties (repeat_penalty = " << p.repeat_penalty
              << ", frequency_penalty = " << p.frequency_penalty
              << ", presence_penalty = " << p.presence_penalty << ") made the logit of token " << t
              << " " << describe(logit);
            throw Error(s.str());
        }
    }
}

int32_t Sampler::draw(std::span<const Candidate> survivors) {
    double total = 0.0;
    for (const Candidate& c : survivors) total += weights_[c.id];
    const double target = uniform01() * total;
    double cum = 0.0;
    for (const Candidate& c : survivors) {
        cum += weights_[c.id];
        if (cum > target) return c.id;
    }
    return survivors.back().id;  // rounding left target at the very top
}

std::span<const Candidate> Sampler::truncate(float max_logit, float inv_t) {
    const auto n = static_cast<size_t>(n_vocab_);
    // top-k: the k best, sorted; otherwise every token that is not banned, in id order.
    std::span<Candidate> set;
    bool sorted = false;
    const auto top_k = static_cast<size_t>(params_.top_k);
    if (top_k > 0 && top_k < n) {
        set = std::span(candidates_).first(sampling::select_top(logits_, top_k, candidates_));
        sorted = true;
    } else {
        size_t m = 0;
        for (size_t i = 0; i < n; ++i)
            if (logits_[i] > -kInf) candidates_[m++] = {static_cast<int32_t>(i), logits_[i]};
        set = std::span(candidates_).first(m);
    }

    // top-p is measured against the top-k set's own total at T = 1 (as llama.cpp renormalizes
    // after top-k and applies temperature last), so take that total before min-p shrinks the set.
    const bool use_top_p = params_.top_p < 1.0f;
    const float* weights_t1 = weights_.data();
    double total_t1 = 0.0;
    if (use_top_p) {
        if (inv_t != 1.0f) {
            for (const Candidate& c : set)
                weights_t1_[c.id] = sampling::fast_exp_nonpositive(c.logit - max_logit);
            weights_t1 = weights_t1_.data();
        }
        for (const Candidate& c : set) total_t1 += weights_t1[c.id];
    }

    // min-p keeps logits >= max + log(min_p): a most-likely prefix, like top-p's, so applying it
    // first (order kept) and cutting top-p's prefix inside it gives llama.cpp's result.
    if (params_.min_p > 0.0f) {
        const float threshold = max_logit + std::log(params_.min_p);
        size_t kept = 0;
        for (const Candidate& c : set)
            if (c.logit >= threshold) set[kept++] = c;
        set = set.first(kept);
    }

    if (use_top_p) {
        const double target = static_cast<double>(params_.top_p) * total_t1;
        size_t keep = set.size();
        if (sorted) {
            double cum = 0.0;
            for (size_t i = 0; i < set.size(); ++i) {
                cum += weights_t1[set[i].id];
                if (cum >= target) {
                    keep = i + 1;
                    break;
                }
            }
        } else {
            keep = sampling::sort_until_mass_bucketed(set, {weights_t1, n}, max_logit, target);
        }
        set = set.first(keep);
    }

    return set;
}

float Sampler::prepare(std::span<const float> logits, std::span<const int32_t> history) {
    const auto n = static_cast<size_t>(n_vocab_);
    if (logits.size() != n) {
        throw Error("sampler: got " + std::to_string(logits.size()) +
                    " logits, expected the vocabulary size " + std::to_string(n));
    }
    copy_checked(logits);
    apply_penalties(history);
    const float max_logit = sampling::max_value(logits_);
    if (max_logit == -kInf) throw Error("sampler: every logit is -inf (all tokens banned)");
    return max_logit;
}

bool Sampler::greedy() const {
    // A temperature so small that 1/T overflows (denormal) is greedy too.
    const float temperature = params_.temperature;
    return temperature == 0.0f || std::isinf(1.0f / temperature);
}

void Sampler::distribution(std::span<const float> logits, std::span<const int32_t> history,
                           TokenDist& out) {
    const float max_logit = prepare(logits, history);
    out.ids.clear();
    out.probs.clear();
    if (greedy()) {
        sampling::select_top(logits_, 1, candidates_);
        out.ids.push_back(candidates_[0].id);
        out.probs.push_back(1.0);
        return;
    }
    const float inv_t = 1.0f / params_.temperature;
    sampling::exp_shifted_sum(logits_, max_logit, inv_t, weights_);
    const std::span<const Candidate> survivors = truncate(max_logit, inv_t);
    double total = 0.0;
    for (const Candidate& c : survivors) total += weights_[c.id];
    out.ids.reserve(survivors.size());
    out.probs.reserve(survivors.size());
    for (const Candidate& c : survivors) {
        out.ids.push_back(c.id);
        out.probs.push_back(weights_[c.id] / total);
    }
}

int32_t Sampler::draw_from(const TokenDist& d) {
    if (d.ids.empty()) throw Error("sampler: cannot draw from an empty distribution");
    const double target = uniform01();
    double cum = 0.0;
    for (size_t i = 0; i < d.ids.size(); ++i) {
        cum += d.probs[i];
        if (cum > target) return d.ids[i];
    }
    return d.ids.back();  // rounding left target at the very top
}

SampledToken Sampler::reported(float max_logit, double& log_total) {
    // The reported distribution: softmax(logits / T) over the whole vocabulary (T = 1 if greedy).
    const float inv_t = greedy() ? 1.0f : 1.0f / params_.temperature;
    log_total = std::log(sampling::exp_shifted_sum(logits_, max_logit, inv_t, weights_));
    SampledToken out;
    const size_t n_report = std::max<size_t>(static_cast<size_t>(params_.n_probs), 1);
    const size_t n_best = sampling::select_top(logits_, n_report, candidates_);
    out.n_top = static_cast<int32_t>(std::min(n_best, static_cast<size_t>(params_.n_probs)));
    for (int32_t i = 0; i < out.n_top; ++i)
        out.top_storage[i] = {candidates_[i].id,
                              logprob_of(candidates_[i].id, max_logit, log_total)};
    return out;
}

float Sampler::logprob_of(int32_t id, float max_logit, double log_total) const {
    const double inv_t = greedy() ? 1.0 : 1.0 / static_cast<double>(params_.temperature);
    return static_cast<float>((static_cast<double>(logits_[id]) - max_logit) * inv_t - log_total);
}

SampledToken Sampler::report(std::span<const float> logits, std::span<const int32_t> history,
                             int32_t id) {
    if (id < 0 || id >= n_vocab_)
        throw Error("sampler: token " + std::to_string(id) + " is outside the vocabulary [0, " +
                    std::to_string(n_vocab_) + ")");
    const float max_logit = prepare(logits, history);
    double log_total = 0;
    SampledToken out = reported(max_logit, log_total);
    out.id = id;
    out.logprob = logprob_of(id, max_logit, log_total);
    return out;
}

SampledToken Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
    const float max_logit = prepare(logits, history);
    double log_total = 0;
    SampledToken out = reported(max_logit, log_total);
    const auto logprob = [&](int32_t id) { return logprob_of(id, max_logit, log_total); };

    if (greedy()) {
        out.id = candidates_[0].id;  // select_top breaks ties by the lower id
        out.logprob = logprob(out.id);
        out.n_candidates = 1;
        return out;
    }

    const float inv_t = 1.0f / params_.temperature;
    const std::span<const Candidate> survivors = truncate(max_logit, inv_t);
    // Temperature is already in `weights`; draw over the survivors in their (deterministic)
    // order: most likely first if sorted, else by id.
    out.id = draw(survivors);
    out.logprob = logprob(out.id);
    out.n_candidates = static_cast<int32_t>(survivors.size());
    return out;
}

}  // namespace fluoro
