// Flash attention on the CPU (AttentionImpl::Flash; see cpu_attention.h). Each task, one per
// (token, KV head, key range), walks its keys in tiles of kTile: q·k for every query head of the
// group against the tile's keys (each K/V row loaded once for the group), then per head an online
// softmax — m = running max, l = running Σ exp(s - m), o = running Σ exp(s - m)·v; when a tile
// raises the max, o and l are rescaled by exp(m_old - m_new) — and a single division by l at the
// end. Only one tile of scores is alive per worker, whatever the context. The row's log-sum-exp
// m + log(l) is kept for capture.
//
// Batch invariance (speculative verification must reproduce decode bit for bit): a row's keys are
// cut into ranges of kRange keys from its first key, whatever the batch. Each range yields a
// partial (m, l, o / l); a row of several ranges is the log-sum-exp merge of its partials, in
// range order. A small batch (decode) runs the ranges as parallel tasks (flash-decoding); a large
// one (prefill) runs each row's ranges in one task, one after the other — the same arithmetic.
//
// Numerics: with F16 keys the queries are rounded to fp16 (as the cache rounded K); the
// probabilities are not rounded, unlike the standard path. A quantized cache (Q8_0, Q4_0) is read
// in place, dequantized in registers (kv_rows.h head_rows), q unrounded.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/cpu/attention_split.h"
#include "backend/cpu/cpu_attention.h"
#include "backend/cpu/kernels/vec_math.h"
#include "backend/cpu/kv_rows.h"

namespace fluoro::cpu {
namespace {

constexpr int64_t kTile = 256;   // keys per tile
constexpr int64_t kRange = 512;  // keys per range (a multiple of kTile)

int64_t n_ranges(int64_t keys) {
    return (keys + kRange - 1) / kRange;
}

// Merges the n partials of one (token, query head), `stride` floats apart, into o (dv values)
// and returns the log-sum-exp.
float merge_ranges(const float* part, int64_t stride, int64_t n, int64_t dv, float* o) {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < n; ++c)
        if (part[c * stride + 1] > 0) m = std::max(m, part[c * stride]);
    double total = 0;
    for (int64_t c = 0; c < n; ++c)
        if (part[c * stride + 1] > 0)
            total += double(part[c * stride + 1]) * std::exp(double(part[c * stride] - m));
    std::fill(o, o + dv, 0.0f);
    for (int64_t c = 0; c < n; ++c) {
        const float* pc = part + c * stride;
        if (pc[1] <= 0) continue;
        const auto w = float(double(pc[1]) * std::exp(double(pc[0] - m)) / total);
        for (int64_t d = 0; d < dv; ++d) o[d] += w * pc[2 + d];
    }
    return total > 0 ? float(double(m) + std::log(total)) : m;
}

struct FlashContext {
    const AttentionParams& p;
    const Act& q;
    const Batch& batch;
    const KvCache& kv;
    AttentionScratch& scratch;
    int64_t stash_token;
    KvTypes type;
    bool round_q;
    int64_t group, dk, dv;
    const VecMath& vm;

    // Online softmax of token t's KV head kvh over keys [begin, begin + n) (n >= 1). Writes per
    // group member g, at o + g * o_stride: with `partial`, (m, l, values / l); else the values
    // / l, and the log-sum-exp to the scratch.
    void range(int64_t t, int64_t kvh, int64_t begin, int64_t n, int worker, float* o,
               int64_t o_stride, bool partial) const {
        const int64_t seq = batch.seq_ids[size_t(t)];
        const int64_t first = key_range(p, batch.positions[size_t(t)]).first;
        float* values = partial ? o + 2 : o;
        float* tile = scratch.per_worker.data() + worker * scratch.per_worker_floats;  // g x kTile
        float* qh = tile + group * kTile;                                              // g x dk
        float* m = qh + group * dk;                                                    // g
        float* l = m + group;                                                          // g
        const float* qrow = q.data + t * q.width + kvh * group * dk;
        if (round_q)
            vm.round_f16(qrow, qh, group * dk);
        else
            std::copy(qrow, qrow + group * dk, qh);
        for (int64_t g = 0; g < group; ++g) {
            m[g] = -std::numeric_limits<float>::infinity();
            l[g] = 0.0f;
            std::fill(values + g * o_stride, values + g * o_stride + dv, 0.0f);
        }
        for (int64_t j0 = begin; j0 < begin + n; j0 += kTile) {
            const int64_t nt = std::min(kTile, begin + n - j0);
            for (int64_t j = j0; j < j0 + nt;) {
                const KvHeadRows k = head_rows(type.k, kv.k_run(p.layer, seq, j, j0 + nt - j), kvh);
                vm.qk(k.elem, qh, int(group), dk, k.data, k.stride, k.rows, p.scale,
                      tile + (j - j0), nt);
                j += k.rows;
            }
            if (p.softcap > 0) vm.softcap(tile, group * nt, p.softcap);
            if (t == stash_token)
                for (int64_t g = 0; g < group; ++g)
                    std::copy_n(tile + g * nt, nt,
                                scratch.stash.data() + (kvh * group + g) * scratch.stash_stride +
                                    (j0 - first));
            for (int64_t g = 0; g < group; ++g) {
                float* s = tile + g * nt;
                const float m_new = std::max(m[g], vm.max(s, nt));
                if (m_new > m[g] && l[g] > 0) {  // the max grew: rescale what was summed so far
                    const float r = std::exp(m[g] - m_new);
                    l[g] *= r;
                    vm.scale(values + g * o_stride, dv, r, false);
                }
                m[g] = m_new;
                l[g] += vm.exp_sub_sum(s, nt, m_new);
            }
            for (int64_t j = j0; j < j0 + nt;) {
                const KvHeadRows v = head_rows(type.v, kv.v_run(p.layer, seq, j, j0 + nt - j), kvh);
                vm.pv(v.elem, tile + (j - j0), int(group), nt, v.rows, v.data, v.stride, dv, values,
                      o_stride);
                j += v.rows;
            }
        }
        for (int64_t g = 0; g < group; ++g) {
            // l >= 1 (the max key contributes exp(0)); the guard keeps a NaN-free 0 otherwise.
            vm.scale(values + g * o_stride, dv, l[g] > 0 ? 1.0f / l[g] : 0.0f, false);
            if (partial) {
                o[g * o_stride] = m[g];
                o[g * o_stride + 1] = l[g];
            } else {
                scratch.lse[size_t(t * p.n_head + kvh * group + g)] = m[g] + std::log(l[g]);
            }
        }
    }

    // Merges token t's KV head kvh from its nr partials (laid out (range, g, pf)) into out.
    void merge(int64_t t, int64_t kvh, const float* part, int64_t nr, Act out) const {
        const int64_t pf = partial_floats(p);
        for (int64_t g = 0; g < group; ++g) {
            const int64_t h = kvh * group + g;
            scratch.lse[size_t(t * p.n_head + h)] =
                merge_ranges(part + g * pf, group * pf, nr, dv, out.data + t * out.width + h * dv);
        }
    }
};

}  // namespace

void attend_flash(ThreadPool& pool, const AttentionParams& p, const Act& q, const Batch& batch,
                  const KvCache& kv, Act out, AttentionScratch& scratch, int64_t stash_token) {
    const KvTypes type = kv.shape().type;
    const int64_t group = p.n_head / p.n_head_kv, dk = p.head_dim_k, dv = p.head_dim_v;
    const int64_t pf = partial_floats(p);
    const int64_t group_partial = group * pf;  // floats of one range's partials
    // Tile scores, queries, m and l; then (large batches) one row's range partials.
    const int64_t per_worker =
        group * (kTile + dk + 2) + n_ranges(kv.shape().n_ctx) * group_partial;
    const FlashContext fc{p,       q,           batch, kv,
                          scratch, stash_token, type,  type.k == KvType::F16,
                          group,   dk,          dv,    vec_math()};
    int64_t max_nr = 1;
    for (int64_t t = 0; t < batch.size(); ++t)
        max_nr = std::max(max_nr, n_ranges(key_range(p, batch.positions[size_t(t)]).count));
    if (scratch.per_worker_floats < per_worker ||
        int64_t(scratch.per_worker.size()) < per_worker * pool.size()) {
        scratch.per_worker_floats = std::max(scratch.per_worker_floats, per_worker);
        scratch.per_worker.resize(size_t(scratch.per_worker_floats * pool.size()));
    }
    const int64_t pairs = batch.size() * p.n_head_kv;

    if (pairs >= 4 * int64_t(pool.size()) || max_nr == 1) {
        // Enough rows to keep the threads busy: one task per (token, KV head), ranges in turn.
        pool.run(pairs, [&](int64_t pair, int worker) {
            const int64_t t = pair / p.n_head_kv, kvh = pair % p.n_head_kv;
            const KeyRange keys = key_range(p, batch.positions[size_t(t)]);
            const int64_t nr = n_ranges(keys.count);
            if (nr == 1)
                return fc.range(t, kvh, keys.first, keys.count, worker,
                                out.data + t * out.width + kvh * group * dv, dv, false);
            float* part = scratch.per_worker.data() + worker * scratch.per_worker_floats +
                          group * (kTile + dk + 2);
            for (int64_t c = 0; c < nr; ++c) {
                const int64_t begin = keys.first + c * kRange;
                fc.range(t, kvh, begin, std::min(kRange, keys.first + keys.count - begin), worker,
                         part + c * group_partial, pf, true);
            }
            fc.merge(t, kvh, part, nr, out);
        });
        return;
    }
    // Decode-sized batch: every range is a task of its own (flash-decoding), merged afterwards.
    const size_t need = size_t(pairs * max_nr * group_partial);
    if (scratch.partial.size() < need) scratch.partial.resize(need);
    pool.run(pairs * max_nr, [&](int64_t task, int worker) {
        // KV heads innermost: the heads of one key range run next to each other (on both
        // threads), so the cache lines of those keys' rows (which hold every head) come from
        // memory once rather than once per head. Same arithmetic in any order. SmolLM2 (3 KV
        // heads), fluoro_cpu_attention_bench BM_AttentionDecode_SmolLM2 ctx 32768 (KV from
        // memory), four alternations: 5.4-6.8 ms with ranges innermost, 3.9-4.3 ms with heads;
        // ctx 8192 (in cache) unchanged. (Gemma 3 has one KV head: no change.)
        const int64_t kvh = task % p.n_head_kv;
        const int64_t c = task / p.n_head_kv % max_nr;
        const int64_t t = task / p.n_head_kv / max_nr;
        const int64_t pair = t * p.n_head_kv + kvh;
        const KeyRange keys = key_range(p, batch.positions[size_t(t)]);
        const int64_t nr = n_ranges(keys.count), begin = keys.first + c * kRange;
        if (c >= nr) return;
        const int64_t n = std::min(kRange, keys.first + keys.count - begin);
        if (nr == 1)
            return fc.range(t, kvh, begin, n, worker, out.data + t * out.width + kvh * group * dv,
                            dv, false);
        fc.range(t, kvh, begin, n, worker,
                 scratch.partial.data() + (pair * max_nr + c) * group_partial, pf, true);
    });
    for (int64_t pair = 0; pair < pairs; ++pair) {
        const int64_t t = pair / p.n_head_kv;
        const int64_t nr = n_ranges(key_range(p, batch.positions[size_t(t)]).count);
        if (nr > 1)
            fc.merge(t, pair % p.n_head_kv, scratch.partial.data() + pair * max_nr * group_partial,
                     nr, out);
    }
}

}  // namespace fluoro::cpu
