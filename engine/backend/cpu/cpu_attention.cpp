#include "backend/cpu/cpu_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cpu/kernels/vec_math.h"
#include "core/error.h"

namespace fluoro::cpu {
namespace {

// Fewest keys worth a task of their own in a split decode step.
constexpr int64_t kMinKeysPerSplit = 64;

KvElem elem_of(KvType t) {
    return t == KvType::F16 ? KvElem::F16 : KvElem::F32;
}

// The keys token t attends to: [first, first + count).
struct KeyRange {
    int64_t first;
    int64_t count;
};

KeyRange key_range(const AttentionParams& p, int64_t pos) {
    const int64_t lo = p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0;
    return {lo, pos - lo + 1};
}

// Into how many key ranges each (token, KV head) is split: enough tasks to keep every thread
// busy when the batch alone cannot, never ranges shorter than kMinKeysPerSplit.
int64_t choose_split(const AttentionParams& p, const Batch& batch, int threads) {
    const int64_t pairs = batch.size() * p.n_head_kv;
    const int64_t want_tasks = 4 * int64_t(threads);
    if (threads <= 1 || pairs >= want_tasks) return 1;
    int64_t max_keys = 0;
    for (int64_t t = 0; t < batch.size(); ++t)
        max_keys = std::max(max_keys, key_range(p, batch.positions[size_t(t)]).count);
    return std::clamp(max_keys / kMinKeysPerSplit, int64_t{1}, (want_tasks + pairs - 1) / pairs);
}

// Per split task and query head: max and sum of exp, then head_dim_v values normalized by sum.
int64_t partial_floats(const AttentionParams& p) {
    return 2 + p.head_dim_v;
}

// Merges the split ranges of every (token, query head) into out.
void merge_partials(const AttentionParams& p, const Batch& batch, int64_t split,
                    const float* partial, Act out) {
    const int64_t group = p.n_head / p.n_head_kv, dv = p.head_dim_v, pf = partial_floats(p);
    for (int64_t t = 0; t < batch.size(); ++t) {
        for (int64_t h = 0; h < p.n_head; ++h) {
            const int64_t kvh = h / group, g = h % group;
            const auto at = [&](int64_t c) {
                return partial + (((t * p.n_head_kv + kvh) * split + c) * group + g) * pf;
            };
            float m = -std::numeric_limits<float>::infinity();
            for (int64_t c = 0; c < split; ++c)
                if (at(c)[1] > 0) m = std::max(m, at(c)[0]);
            double total = 0;
            for (int64_t c = 0; c < split; ++c)
                if (at(c)[1] > 0) total += double(at(c)[1]) * std::exp(double(at(c)[0] - m));
            float* o = out.data + t * out.width + h * dv;
            std::fill(o, o + dv, 0.0f);
            for (int64_t c = 0; c < split; ++c) {
                const float* part = at(c);
                if (part[1] <= 0) continue;
                const auto w = float(double(part[1]) * std::exp(double(part[0] - m)) / total);
                for (int64_t d = 0; d < dv; ++d) o[d] += w * part[2 + d];
            }
        }
    }
}

}  // namespace

void store_kv(ThreadPool& pool, const AttentionParams& p, const Act& k, const Act& v,
              const Batch& batch, KvCache& kv) {
    const KvType type = kv.shape().type;
    const VecMath& vm = vec_math();
    const int64_t nk = p.n_head_kv * p.head_dim_k, nv = p.n_head_kv * p.head_dim_v;
    const auto store_row = [&](const float* src, void* dst, int64_t n) {
        if (type == KvType::F32)
            std::memcpy(dst, src, size_t(n) * sizeof(float));
        else
            vm.f32_to_f16(src, static_cast<uint16_t*>(dst), n);
    };
    pool.run(batch.size(), [&](int64_t t, int) {
        const int64_t seq = batch.seq_ids[size_t(t)], pos = batch.positions[size_t(t)];
        store_row(k.data + t * k.width, kv.k_row(p.layer, seq, pos), nk);
        store_row(v.data + t * v.width, kv.v_row(p.layer, seq, pos), nv);
    });
}

void attend(ThreadPool& pool, const AttentionParams& p, const Act& q, const Batch& batch,
            const KvCache& kv, Act out, AttentionScratch& scratch) {
    if (p.n_head_kv <= 0 || p.n_head % p.n_head_kv != 0)
        throw Error("cpu backend: attention: head counts do not divide");
    const KvType type = kv.shape().type;
    const KvElem elem = elem_of(type);
    const bool round = type == KvType::F16;
    const VecMath& vm = vec_math();
    const int64_t group = p.n_head / p.n_head_kv;
    const int64_t dk = p.head_dim_k, dv = p.head_dim_v;
    const size_t k_off = size_t(dk) * kv_type_size(type), v_off = size_t(dv) * kv_type_size(type);

    const int64_t split = choose_split(p, batch, pool.size());
    const int64_t n_tasks = batch.size() * p.n_head_kv * split;
    // Sized for the whole context and the most split tasks (choose_split keeps them under
    // 8 x threads), so the buffers are allocated once, not as a decode's context grows.
    const int64_t per_worker = group * (kv.shape().n_ctx + dk);
    if (scratch.per_worker_floats < per_worker) {
        scratch.per_worker_floats = per_worker;
        scratch.per_worker.assign(size_t(per_worker * pool.size()), 0.0f);
    }
    const int64_t pf = partial_floats(p);
    const int64_t partial_need = std::max<int64_t>(n_tasks, 8 * pool.size()) * group * pf;
    if (split > 1 && int64_t(scratch.partial.size()) < partial_need)
        scratch.partial.resize(size_t(partial_need));

    pool.run(n_tasks, [&](int64_t task, int worker) {
        const int64_t c = task % split, pair = task / split;
        const int64_t t = pair / p.n_head_kv, kvh = pair % p.n_head_kv;
        const int64_t seq = batch.seq_ids[size_t(t)];
        const KeyRange keys = key_range(p, batch.positions[size_t(t)]);
        const int64_t per_range = (keys.count + split - 1) / split;
        const int64_t begin = keys.first + std::min(keys.count, c * per_range);
        const int64_t n = std::min(keys.first + keys.count, begin + per_range) - begin;

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
        if (round)
            vm.round_f16(qrow, qh, group * dk);
        else
            std::copy(qrow, qrow + group * dk, qh);

        for (int64_t j = begin; j < begin + n;) {
            const KvCache::Run run = kv.k_run(p.layer, seq, j, begin + n - j);
            vm.qk(elem, qh, int(group), dk, run.data + size_t(kvh) * k_off, run.stride, run.rows,
                  p.scale, scores + (j - begin), n);
            j += run.rows;
        }
        if (p.softcap > 0) vm.softcap(scores, group * n, p.softcap);
        for (int64_t g = 0; g < group; ++g) {
            float* s = scores + g * n;
            const float m = vm.max(s, n);
            const float sum = vm.exp_sub_sum(s, n, m);
            vm.scale(s, n, 1.0f / sum, round);
            if (split > 1) {
                o[g * o_stride] = m;
                o[g * o_stride + 1] = sum;
            }
            std::fill(o_values + g * o_stride, o_values + g * o_stride + dv, 0.0f);
        }
        for (int64_t j = begin; j < begin + n;) {
            const KvCache::Run run = kv.v_run(p.layer, seq, j, begin + n - j);
            vm.pv(elem, scores + (j - begin), int(group), n, run.rows,
                  run.data + size_t(kvh) * v_off, run.stride, dv, o_values, o_stride);
            j += run.rows;
        }
    });
    if (split > 1) merge_partials(p, batch, split, scratch.partial.data(), out);
}

}  // namespace fluoro::cpu
