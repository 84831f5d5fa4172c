#include "decode/sequence.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>
#include <string>

#include "core/error.h"
#include "core/run_errors.h"
#include "kv/prefix_cache.h"
#include "model/model.h"

namespace fluoro {

namespace {
double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
}
}  // namespace

Sequence::Sequence(Model& model, KvCache& kv, int64_t seq_id)
    : model_(model), kv_(kv), seq_(seq_id) {
    if (seq_id < 0 || seq_id >= kv.shape().n_seq)
        throw Error("sequence " + std::to_string(seq_id) + " does not exist in the KV cache");
    tokens_.reserve(size_t(kv.capacity(seq_id)));
    slot_pos_.reserve(size_t(kv.capacity(seq_id)));
    positions_.reserve(size_t(model.max_batch()));
    seq_ids_.assign(size_t(model.max_batch()), int32_t(seq_id));
    kv_.set_length(seq_, 0);
}

int64_t Sequence::context_size() const {
    return kv_.capacity(seq_);
}

bool Sequence::evicting() const {
    return policy_.kind != KvPolicyKind::Full;
}

int64_t Sequence::budget() const {
    return policy_.effective_budget(context_size());
}

int64_t Sequence::remaining() const {
    if (evicting()) return std::numeric_limits<int32_t>::max();
    return budget() - int64_t(tokens_.size());
}

void Sequence::set_kv_policy(const KvPolicyConfig& cfg) {
    if (std::string p = cfg.problem(context_size()); !p.empty()) throw Error(p);
    policy_ = cfg;
    low_count_.assign(tokens_.size(), 0.0f);
    prev_attention_.assign(tokens_.size(), 0.0f);
}

std::vector<SequenceEviction> Sequence::take_evictions() {
    std::vector<SequenceEviction> out;
    out.swap(evictions_);
    return out;
}

void Sequence::set_exit_layer(int64_t n) {
    if (n < 0) throw Error("exit layer " + std::to_string(n) + " must be >= 0 (0 = all layers)");
    exit_layer_ = n;
    reset();
}

size_t Sequence::use_prefix_cache(std::span<const int32_t> prompt, size_t reuse,
                                  PrefillStats& info) {
    const PrefixCache::Stats before = prefix_cache_->stats();
    // The conversation this sequence moves away from stays available (as far as its K/V is
    // written: the last sampled token may not be).
    if (const auto held = prefix_cacheable(); reuse < history_.size() && !held.empty())
        prefix_cache_->store(held, seq_);
    // The last prompt token is always computed: its logits are the result.
    const PrefixCache::Match m = prefix_cache_->lookup(prompt.first(prompt.size() - 1));
    if (m.tokens > int64_t(reuse)) {
        prefix_cache_->restore(m, seq_);
        history_.assign(prompt.begin(), prompt.begin() + m.tokens);
        tokens_ = history_;
        slot_pos_.resize(history_.size());
        std::iota(slot_pos_.begin(), slot_pos_.end(), int64_t(0));
        low_count_.clear();
        prev_attention_.clear();
        reuse = size_t(m.tokens);
        info.from_prefix_cache = true;
        info.diverge_at = m.next_cached >= 0 ? m.tokens : -1;
        info.diverge_prompt_token = m.next_cached >= 0 ? prompt[size_t(m.tokens)] : -1;
        info.diverge_cached_token = m.next_cached;
    }
    prefix_cache_->reserve_for(seq_);  // the cache never starves this sequence of blocks
    const PrefixCache::Stats after = prefix_cache_->stats();
    info.evicted_entries = after.evictions - before.evictions;
    info.evicted_tokens = after.evicted_tokens - before.evicted_tokens;
    return reuse;
}

std::span<const int32_t> Sequence::prefix_cacheable() const {
    if (tokens_.size() != history_.size()) return {};
    const auto held = std::min<size_t>(history_.size(), size_t(kv_.length(seq_)));
    return std::span<const int32_t>(history_).first(held);
}

void Sequence::reset() {
    truncate(0);
}

void Sequence::truncate(int64_t n) {
    n = std::clamp<int64_t>(n, 0, int64_t(history_.size()));
    history_.resize(size_t(n));
    // Slots hold ascending conversation positions: keep those before n.
    const auto slots =
        size_t(std::lower_bound(slot_pos_.begin(), slot_pos_.end(), n) - slot_pos_.begin());
    tokens_.resize(slots);
    slot_pos_.resize(slots);
    low_count_.resize(std::min(low_count_.size(), slots));
    prev_attention_.resize(std::min(prev_attention_.size(), slots));
    kv_.set_length(seq_, int64_t(slots));
}

std::vector<float> Sequence::slot_attention() const {
    std::vector<float> sum(tokens_.size(), 0.0f);
    bool any = false;
    const KvShape& s = kv_.shape();
    for (int64_t il = 0; il < s.n_layer; ++il)
        for (int64_t h = 0; h < s.n_head_kv[size_t(il)]; ++h) {
            const std::span<const float> sc = model_.backend().attention_key_scores(il, h, seq_);
            if (sc.empty()) continue;
            any = true;
            for (size_t j = 0; j < sum.size() && j < sc.size(); ++j) sum[j] += sc[j];
        }
    if (!any) sum.clear();
    return sum;
}

void Sequence::make_room(int64_t incoming, std::span<const float> observed, int64_t limit) {
    const int64_t length = int64_t(tokens_.size());
    if (limit <= 0) limit = budget();
    if (length + incoming <= limit) return;
    const auto start = std::chrono::steady_clock::now();
    std::vector<float> attention;
    if (policy_.needs_scores()) attention = slot_attention();
    low_count_.resize(tokens_.size(), 0.0f);
    KvPolicyInput in{length, incoming, attention, {}, observed};
    if (policy_.kind == KvPolicyKind::Scissorhands) in.low_count = low_count_;
    KvPolicyConfig cfg = policy_;
    cfg.budget = limit;
    const std::optional<KvDecision> d = kv_decide(cfg, context_size(), in);
    if (!d) return;

    model_.compact_kv(kv_, seq_, d->keep);
    SequenceEviction ev;
    ev.policy = policy_.kind;
    ev.length_before = length;
    ev.reasons = d->reasons;
    for (int64_t j : d->evicted) ev.evicted.push_back(slot_pos_[size_t(j)]);
    prev_attention_.resize(tokens_.size(), 0.0f);
    for (size_t i = 0; i < d->keep.size(); ++i) {
        const auto j = size_t(d->keep[i]);
        ev.kept.push_back(slot_pos_[j]);
        tokens_[i] = tokens_[j];
        slot_pos_[i] = slot_pos_[j];
        low_count_[i] = low_count_[j];
        prev_attention_[i] = prev_attention_[j];
    }
    tokens_.resize(d->keep.size());
    slot_pos_.resize(d->keep.size());
    low_count_.resize(d->keep.size());
    prev_attention_.resize(d->keep.size());
    ev.ms = ms_since(start);
    evictions_.push_back(std::move(ev));
}

void Sequence::after_step() {
    if (policy_.kind != KvPolicyKind::Scissorhands) return;
    // This step's attention per slot = the growth of the accumulated scores.
    const std::vector<float> now = slot_attention();
    if (now.empty()) return;
    prev_attention_.resize(now.size(), 0.0f);
    low_count_.resize(now.size(), 0.0f);
    std::vector<float> step(now.size());
    for (size_t j = 0; j < now.size(); ++j) step[j] = now[j] - prev_attention_[j];
    const int64_t history =
        policy_.history > 0 ? policy_.history : std::max<int64_t>(1, budget() / 2);
    kv_update_low_count(low_count_, step, history);
    prev_attention_ = now;
}

std::span<const float> Sequence::forward_append(std::span<const int32_t> tokens,
                                                std::span<const int32_t> rows) {
    const int64_t first = int64_t(tokens_.size());
    positions_.clear();
    for (size_t i = 0; i < tokens.size(); ++i) positions_.push_back(int32_t(first + int64_t(i)));
    const Batch batch{tokens, positions_, std::span<const int32_t>(seq_ids_.data(), tokens.size()),
                      rows, exit_layer_};
    auto logits = model_.forward(batch, kv_);
    appended(tokens);
    return logits;
}

void Sequence::appended(std::span<const int32_t> tokens) {
    for (int32_t t : tokens) {
        tokens_.push_back(t);
        slot_pos_.push_back(int64_t(history_.size()));
        history_.push_back(t);
    }
    kv_.set_length(seq_, int64_t(tokens_.size()));
    after_step();
}

void Sequence::set_last_prefill(const PrefillStats& stats) {
    last_prefill_ = stats;
}

size_t Sequence::reuse_prefix(std::span<const int32_t> prompt, PrefillStats& info) {
    if (prompt.empty()) throw Error("the prompt is empty: nothing to compute");
    if (!evicting() && int64_t(prompt.size()) > budget())
        throw ContextOverflowError(
            "the prompt has " + std::to_string(prompt.size()) + " tokens but the context holds " +
                std::to_string(budget()) +
                "; shorten it, raise the context size or choose an evicting KV policy",
            int64_t(prompt.size()), budget());
    model_.file().check_unchanged_on_disk();  // a file truncated under us would fault, not err
    // Longest common prefix with the conversation so far, leaving the last token to compute.
    const size_t common = std::min(history_.size(), prompt.size() - 1);
    size_t reuse = 0;
    while (reuse < common && history_[reuse] == prompt[reuse]) ++reuse;
    info = PrefillStats{};
    if (reuse < common) {  // this conversation held another token at `reuse`
        info.diverge_at = int64_t(reuse);
        info.diverge_prompt_token = prompt[reuse];
        info.diverge_cached_token = history_[reuse];
    }
    if (prefix_cache_ != nullptr && !evicting() && exit_layer_ == 0)
        reuse = use_prefix_cache(prompt, reuse, info);
    // A cache keeping only the window of sliding-window layers cannot go back to a point whose
    // window rows it released: the prompt is then computed from the start.
    if (reuse < history_.size() && int64_t(reuse) < kv_.min_cut_length(seq_)) reuse = 0;
    truncate(int64_t(reuse));
    info.prompt_tokens = int64_t(prompt.size());
    info.reused_tokens = int64_t(reuse);
    info.computed_tokens = int64_t(prompt.size() - reuse);
    return reuse;
}

std::span<const float> Sequence::prefill(std::span<const int32_t> prompt, PrefillStats* stats,
                                         const std::atomic<bool>* cancel) {
    const auto start = std::chrono::steady_clock::now();
    PrefillStats info;
    const size_t reuse = reuse_prefix(prompt, info);

    // SnapKV compresses a prompt once it is all cached: during the prefill the cache may fill
    // the whole context (beyond it, the policy's h2o fallback makes room), and the last
    // `observe` prompt tokens run one at a time, so the attention statistics (the last query row
    // of each step) see every query of the observation window.
    const bool snap = policy_.kind == KvPolicyKind::SnapKV && int64_t(prompt.size()) > budget();
    const int64_t limit = snap ? context_size() : budget();
    size_t observe_from = prompt.size();
    if (snap)
        observe_from = std::max(
            reuse, prompt.size() - size_t(std::min<int64_t>(policy_.observe, budget() / 4)));
    // Under an evicting policy a step takes at most half the limit, so room can always be made.
    int64_t step = model_.max_batch();
    if (evicting()) step = std::min(step, std::max<int64_t>(1, limit / 2));
    std::vector<float> before_window;

    std::span<const float> logits;
    for (size_t begin = reuse; begin < prompt.size();) {
        if (cancel && cancel->load()) throw Error("prefill cancelled");
        if (begin == observe_from) before_window = slot_attention();
        const int64_t n_step = begin >= observe_from ? 1 : step;
        const size_t end = std::min({prompt.size(), begin + size_t(n_step),
                                     begin < observe_from ? observe_from : prompt.size()});
        make_room(int64_t(end - begin), {}, limit);
        const int32_t last_row = int32_t(end - begin - 1);
        logits = forward_append(prompt.subspan(begin, end - begin),
                                std::span<const int32_t>(&last_row, 1));
        begin = end;
    }
    if (observe_from < prompt.size()) {
        // SnapKV's selection: attention the observation window paid to each slot.
        std::vector<float> observed = slot_attention();
        for (size_t j = 0; j < observed.size() && j < before_window.size(); ++j)
            observed[j] -= before_window[j];
        make_room(1, observed);  // compress now, leaving room for the first generated token
    }
    info.ms = ms_since(start);
    last_prefill_ = info;
    if (stats) *stats = info;
    return logits;
}

std::span<const float> Sequence::decode(int32_t token) {
    make_room(1);
    const int32_t row = 0;
    return forward_append(std::span<const int32_t>(&token, 1), std::span<const int32_t>(&row, 1));
}

int64_t Sequence::max_extend() const {
    return std::min(model_.max_batch(), model_.max_logit_rows());
}

std::span<const float> Sequence::extend(std::span<const int32_t> tokens) {
    if (tokens.empty()) throw Error("extend: no tokens to append");
    const int64_t limit = max_extend();
    if (int64_t(tokens.size()) > limit)
        throw Error("extend: " + std::to_string(tokens.size()) +
                    " tokens exceed one forward step (" + std::to_string(limit) + ")");
    make_room(int64_t(tokens.size()));
    rows_.clear();
    for (size_t i = 0; i < tokens.size(); ++i) rows_.push_back(int32_t(i));
    return forward_append(tokens, rows_);
}

}  // namespace fluoro
