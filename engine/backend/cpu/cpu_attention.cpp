#include "backend/cpu/cpu_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/attention_split.h"
#include "backend/cpu/kernels/vec_math.h"
#include "backend/cpu/kv_rows.h"
#include "core/error.h"

namespace fluoro::cpu {

size_t AttentionScratch::bytes() const {
    return (per_worker.capacity() + partial.capacity() + lse.capacity() + stash.capacity() +
            top_k.capacity() + readout.capacity()) *
           sizeof(float);
}

void store_kv(ThreadPool& pool, const AttentionParams& p, const Act& k, const Act& v,
              const Batch& batch, KvCache& kv) {
    const KvTypes type = kv.shape().type;
    const int64_t dk = p.head_dim_k, dv = p.head_dim_v;
    // Values read from the keys' rows (MLA's latent): storing the keys stored them.
    const bool store_v = !kv.shape().values_in_keys();
    // Head by head (quantized blocks never cross a head: head_dim is a multiple of the block,
    // so these are the bytes a whole-row store would write, wherever the layout puts them).
    pool.run(batch.size(), [&](int64_t t, int) {
        const int64_t seq = batch.seq_ids[size_t(t)], pos = batch.positions[size_t(t)];
        const KvCache::Slot ks = kv.k_slot(p.layer, seq, pos);
        for (int64_t h = 0; h < p.n_head_kv; ++h)
            kv_store(type.k, k.data + t * k.width + h * dk, ks.head(h), dk);
        if (!store_v) return;
        const KvCache::Slot vs = kv.v_slot(p.layer, seq, pos);
        for (int64_t h = 0; h < p.n_head_kv; ++h)
            kv_store(type.v, v.data + t * v.width + h * dv, vs.head(h), dv);
    });
}

void attend(ThreadPool& pool, const AttentionParams& p, const Act& q, const Batch& batch,
            const KvCache& kv, Act out, AttentionScratch& scratch, const AttendOptions& opt) {
    if (p.n_head_kv <= 0 || p.n_head % p.n_head_kv != 0)
        throw Error("cpu backend: attention: head counts do not divide");
    if (opt.stash_token >= batch.size())
        throw Error("cpu backend: attention: stash token is outside the batch");
    const size_t lse_need = size_t(batch.size() * p.n_head);
    if (scratch.lse.size() < lse_need) scratch.lse.resize(lse_need);
    if (opt.stash_token >= 0) {
        const int64_t n_ctx = kv.shape().n_ctx;
        if (scratch.stash_stride < n_ctx ||
            int64_t(scratch.stash.size()) < p.n_head * scratch.stash_stride) {
            scratch.stash_stride = std::max(scratch.stash_stride, n_ctx);
            scratch.stash.resize(size_t(p.n_head * scratch.stash_stride));
        }
    }
    const int64_t split = choose_split(p, batch, pool.size());
    const int64_t partial_need =
        std::max<int64_t>(batch.size() * p.n_head_kv * split, 8 * pool.size()) *
        (p.n_head / p.n_head_kv) * partial_floats(p);
    if (split > 1 && int64_t(scratch.partial.size()) < partial_need)
        scratch.partial.resize(size_t(partial_need));
    if (opt.impl == AttentionImpl::Flash)
        attend_flash(pool, p, q, batch, kv, out, scratch, opt.stash_token);
    else
        attend_standard(pool, p, q, batch, kv, out, scratch, opt.stash_token);
    if (p.sinks) apply_sinks(p, batch.size(), out, scratch.lse);
}

void apply_sinks(const AttentionParams& p, int64_t n_tokens, Act out, std::span<float> lse) {
    const Weight& w = *p.sinks;
    if (w.type != GgmlType::F32 || w.n_in() != p.n_head || w.interleaved)
        throw Error("cpu backend: attention sinks '" + w.name + "' must be " +
                    std::to_string(p.n_head) + " F32 values (one per query head)");
    if (int64_t(lse.size()) < n_tokens * p.n_head)
        throw Error("cpu backend: attention sinks: no log-sum-exp for every row");
    const float* sink = static_cast<const float*>(w.data);
    const VecMath& vm = vec_math();
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t h = 0; h < p.n_head; ++h) {
            float& L = lse[size_t(t * p.n_head + h)];
            // log(e^L + e^sink), without overflow whichever is larger
            const float with_sink =
                std::max(L, sink[h]) + std::log1p(std::exp(-std::abs(L - sink[h])));
            vm.scale(out.data + t * out.width + h * p.head_dim_v, p.head_dim_v,
                     std::exp(L - with_sink), false);
            L = with_sink;
        }
}

void attend_standard(ThreadPool& pool, const AttentionParams& p, const Act& q, const Batch& batch,
                     const KvCache& kv, Act out, AttentionScratch& scratch, int64_t stash_token) {
    const KvTypes type = kv.shape().type;
    // ggml converts q to an F16 key type for q·k, and the probabilities to an F16 value type
    // for p·V.
    const bool round_q = type.k == KvType::F16, round_p = type.v == KvType::F16;
    const VecMath& vm = vec_math();
    const int64_t group = p.n_head / p.n_head_kv;
    const int64_t dk = p.head_dim_k, dv = p.head_dim_v;

    const int64_t split = choose_split(p, batch, pool.size());
    const int64_t n_tasks = batch.size() * p.n_head_kv * split;
    // Sized for the whole context, so the buffers are allocated once, not as a decode's context
    // grows: the scores of a whole key range are alive at once.
    const int64_t per_worker = group * (kv.shape().n_ctx + dk);
    if (scratch.per_worker_floats < per_worker ||
        int64_t(scratch.per_worker.size()) < per_worker * pool.size()) {
        scratch.per_worker_floats = std::max(scratch.per_worker_floats, per_worker);
        scratch.per_worker.resize(size_t(scratch.per_worker_floats * pool.size()));
    }
    const int64_t pf = partial_floats(p);

    pool.run(n_tasks, [&](int64_t task, int worker) {
        const int64_t c = task % split, pair = task / split;
        const int64_t t = pair / p.n_head_kv, kvh = pair % p.n_head_kv;
        const int64_t seq = batch.seq_ids[size_t(t)];
        const KeyRange keys = key_range(p, batch.positions[size_t(t)]);
        // Plain variables, not a structured binding: the lambdas below capture them.
        const SplitRange range = split_range(keys, split, c);
        const int64_t begin = range.begin, n = range.n;

        float* o = split > 1 ? scratch.partial.data() + task * group * pf
                             : out.data + t * out.width + kvh * group * dv;
        const int64_t o_stride = split > 1 ? pf : dv;
        float* o_values = split > 1 ? o + 2 : o;
        if (n <= 0) {  // an empty range of a split step: weight 0 in the merge
            for (int64_t g = 0; g < group; ++g) o[g * o_stride + 1] = 0.0f;
            return;
        }
        float* scores =
            scratch.per_worker.data() + worker * scratch.per_worker_floats;  // group x n
        float* qh = scores + group * n;                                      // group x dk
        const float* qrow = q.data + t * q.width + kvh * group * dk;
        if (round_q)
            vm.round_f16(qrow, qh, group * dk);
        else
            std::copy(qrow, qrow + group * dk, qh);

        for (int64_t j = begin; j < begin + n;) {
            const KvHeadRows k = head_rows(type.k, kv.k_run(p.layer, seq, j, begin + n - j), kvh);
            vm.qk(k.elem, qh, int(group), dk, k.data, k.stride, k.rows, p.scale,
                  scores + (j - begin), n);
            j += k.rows;
        }
        if (p.softcap > 0) vm.softcap(scores, group * n, p.softcap);
        if (t == stash_token)
            for (int64_t g = 0; g < group; ++g)
                std::copy_n(scores + g * n, n,
                            scratch.stash.data() + (kvh * group + g) * scratch.stash_stride +
                                (begin - keys.first));
        for (int64_t g = 0; g < group; ++g) {
            float* s = scores + g * n;
            const float m = vm.max(s, n);
            const float sum = vm.exp_sub_sum(s, n, m);
            vm.scale(s, n, 1.0f / sum, round_p);
            if (split > 1) {
                o[g * o_stride] = m;
                o[g * o_stride + 1] = sum;
            } else {
                scratch.lse[size_t(t * p.n_head + kvh * group + g)] = m + std::log(sum);
            }
            std::fill(o_values + g * o_stride, o_values + g * o_stride + dv, 0.0f);
        }
        for (int64_t j = begin; j < begin + n;) {
            const KvHeadRows v = head_rows(type.v, kv.v_run(p.layer, seq, j, begin + n - j), kvh);
            vm.pv(v.elem, scores + (j - begin), int(group), n, v.rows, v.data, v.stride, dv,
                  o_values, o_stride);
            j += v.rows;
        }
    });
    if (split > 1) merge_partials(p, batch, split, scratch.partial.data(), out, scratch.lse);
}

}  // namespace fluoro::cpu
