// The Engine's readouts besides tokens: the attention capture a front end asks for (validated
// on any thread, applied at step boundaries, drained into AttentionSnapshot and AttentionStats
// events), KV snapshots and evictions, and the prompt cache's event (runtime/prefix_event.h).
#include <algorithm>

#include "core/error.h"
#include "runtime/engine_state.h"
#include "runtime/prefix_event.h"

namespace fluoro {
namespace {

void validate_capture(const SetAttentionCapture& c) {
    for (const AttentionCaptureSpec& spec : c.specs)
        if (spec.layer < -1 || spec.head < -1 || spec.rows < 0 || spec.key_begin < 0 ||
            (spec.key_end > 0 && spec.key_end <= spec.key_begin))
            throw Error("attention capture: bad region (layer " + std::to_string(spec.layer) +
                        ", head " + std::to_string(spec.head) + ", rows " +
                        std::to_string(spec.rows) + ", keys " + std::to_string(spec.key_begin) +
                        ".." + std::to_string(spec.key_end) +
                        "): layer and head must be >= -1, rows >= 0, keys a non-empty range");
}

}  // namespace

PrefixCacheEvent Engine::State::prefix_event(uint64_t run, int64_t prompt_tokens,
                                             int64_t t_ns) const {
    const std::vector<int32_t>& history = seq->tokens();
    const auto prompt = std::span<const int32_t>(history).first(
        size_t(std::clamp<int64_t>(prompt_tokens, 0, int64_t(history.size()))));
    return make_prefix_event(seq->last_prefill(), run, prompt_tokens, prompt, t_ns,
                             model->tokenizer(), prefix_cache.get(),
                             int64_t(kv->shape().bytes_per_token()));
}

void Engine::note_capture(const Command& c) {
    const auto* sc = std::get_if<SetAttentionCapture>(&c);
    if (!sc) return;
    try {
        validate_capture(*sc);
    } catch (const Error&) {
        return;  // reported when the queued command runs
    }
    std::lock_guard lock(capture_mu_);
    pending_capture_ = *sc;
    capture_pending_.store(true);
}

void Engine::rt_apply_capture() {
    State& s = *state_;
    // Scoring KV policies read the accumulated attention the statistics pass computes.
    s.capture.stats = s.capture_cmd.stats || s.kv_policy.needs_scores();
    if (s.backend) s.backend->set_attention_capture(s.capture.active() ? &s.capture : nullptr);
}

void Engine::rt_set_capture(const SetAttentionCapture& c) {
    State& s = *state_;
    validate_capture(c);
    s.capture_cmd = c;
    s.capture.regions.clear();
    for (size_t i = 0; i < c.specs.size(); ++i) {
        const AttentionCaptureSpec& spec = c.specs[i];
        s.capture.regions.push_back(
            {int32_t(i), spec.layer, spec.head, spec.rows, spec.key_begin, spec.key_end});
    }
    rt_apply_capture();
}

void Engine::rt_take_pending_capture() {
    if (!capture_pending_.load()) return;
    std::optional<SetAttentionCapture> c;
    {
        std::lock_guard lock(capture_mu_);
        c.swap(pending_capture_);
        capture_pending_.store(false);
    }
    if (c) rt_set_capture(*c);
}

void Engine::rt_flush_capture(uint64_t run, int64_t step, int64_t t_ns) {
    State& s = *state_;
    AttentionCapture& cap = s.capture;
    // Rows of one (region, layer, head), in the order the forward passes produced them; a
    // prefill in several passes keeps the last `rows` of them.
    std::map<std::tuple<int32_t, int32_t, int32_t>, std::vector<size_t>> groups;
    for (size_t i = 0; i < cap.rows.size(); ++i)
        groups[{cap.rows[i].id, cap.rows[i].layer, cap.rows[i].head}].push_back(i);
    for (auto& [key, members] : groups) {
        const CapturedAttentionRow& first = cap.rows[members.front()];
        const size_t want = first.id < int32_t(s.capture_cmd.specs.size())
                                ? size_t(s.capture_cmd.specs[size_t(first.id)].rows)
                                : 0;
        if (want > 0 && members.size() > want)
            members.erase(members.begin(), members.end() - std::ptrdiff_t(want));
        auto snap = std::make_shared<AttentionSnapshot>();
        snap->run = run;
        snap->step = step;
        snap->layer = first.layer;
        snap->head = first.head;
        snap->first_row = cap.rows[members.front()].pos;
        snap->n_rows = int64_t(members.size());
        snap->key_begin = first.key_begin;
        for (const size_t j : members)
            snap->n_cols = std::max(snap->n_cols, int64_t(cap.rows[j].weights.size()));
        snap->weights.assign(size_t(snap->n_rows * snap->n_cols), 0.0f);
        for (size_t r = 0; r < members.size(); ++r) {
            const std::vector<float>& w = cap.rows[members[r]].weights;
            std::copy(w.begin(), w.end(), snap->weights.begin() + std::ptrdiff_t(r) * snap->n_cols);
        }
        snap->t_ns = t_ns;
        publish(std::shared_ptr<const AttentionSnapshot>(std::move(snap)));
    }
    cap.rows.clear();
    if (!cap.sparsity.empty()) {
        AttentionStats st;
        st.run = run;
        st.step = step;
        st.n_layer = int32_t(s.model->hparams().n_layer);
        for (const LayerSparsity& l : cap.sparsity)
            st.n_head = std::max(st.n_head, int32_t(l.heads.size()));
        st.top_k = cap.top_k;
        st.threshold = cap.threshold;
        st.heads.resize(size_t(st.n_layer) * size_t(st.n_head));
        for (const LayerSparsity& l : cap.sparsity) {  // a later pass of the step overwrites
            if (l.layer < 0 || l.layer >= st.n_layer) continue;
            st.n_keys = std::max(st.n_keys, l.n_keys);
            for (size_t h = 0; h < l.heads.size(); ++h) {
                const HeadSparsity& hs = l.heads[h];
                st.heads[size_t(l.layer) * size_t(st.n_head) + h] = {
                    hs.entropy, hs.top_k_mass, hs.below_threshold, hs.sink_mass};
            }
        }
        st.t_ns = t_ns;
        cap.sparsity.clear();
        publish(std::move(st));
    }
}

std::shared_ptr<const KvSnapshot> Engine::rt_kv_snapshot(uint64_t run, int64_t step,
                                                         int64_t t_ns) const {
    const State& s = *state_;
    const KvOccupancy occ = s.kv->occupancy();
    auto snap = std::make_shared<KvSnapshot>();
    snap->run = run;
    snap->step = step;
    snap->block_tokens = int32_t(occ.block_tokens);
    snap->bytes_per_token = int64_t(occ.bytes_per_token);
    snap->t_ns = t_ns;
    snap->blocks.reserve(occ.blocks.size());
    for (const KvOccupancy::Block& b : occ.blocks) {
        KvBlock blk;
        blk.owner = b.owner;
        blk.tokens = b.tokens;
        blk.state = b.refs > 1     ? KvBlockState::Shared
                    : b.tokens > 0 ? KvBlockState::Used
                                   : KvBlockState::Free;
        snap->blocks.push_back(blk);
    }
    return snap;
}

KvEviction Engine::rt_kv_eviction(uint64_t run, int64_t step, SequenceEviction& e) const {
    const State& s = *state_;
    KvEviction ev;
    ev.run = run;
    ev.step = step;
    ev.policy = std::string(kv_policy_name(e.policy));
    ev.budget = s.kv_policy.effective_budget(s.seq->context_size());
    ev.length_before = e.length_before;
    ev.evicted = std::move(e.evicted);
    ev.kept = std::move(e.kept);
    ev.reasons.reserve(e.reasons.size());
    for (KvKeepReason r : e.reasons) ev.reasons.push_back(uint8_t(r));
    ev.ms = e.ms;
    return ev;
}

}  // namespace fluoro
