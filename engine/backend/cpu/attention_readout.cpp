#include "backend/cpu/attention_readout.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "backend/cpu/attention_split.h"
#include "backend/cpu/kernels/vec_math.h"
#include "backend/cpu/kv_rows.h"
#include "core/error.h"

namespace fluoro::cpu {
namespace {

constexpr int64_t kSinkKeys = 4;
// Readouts of at most this many logits (query heads x keys) run on the calling thread; longer
// ones in one task per query head.
constexpr int64_t kSerialReadoutFloats = int64_t{1} << 14;
constexpr int32_t kMaxTopK = 64;

double top_k_mass(const float* s, const float* block_max, int64_t n, float lse, int32_t k,
                  float* buf) {
    if (k <= 0 || n <= 0) return 0;
    const int64_t n_blocks = (n + kSoftmaxStatsBlock - 1) / kSoftmaxStatsBlock;
    // The k largest block maxima, ascending in top[0..k): insertion, as most blocks lose at once.
    float top[kMaxTopK];
    const int32_t kb = int32_t(std::min<int64_t>(k, n_blocks));
    std::fill(top, top + kb, -std::numeric_limits<float>::infinity());
    for (int64_t b = 0; b < n_blocks; ++b) {
        const float x = block_max[b];
        if (!(x > top[0])) continue;
        int32_t i = 1;
        for (; i < kb && top[i] < x; ++i) top[i - 1] = top[i];
        top[i - 1] = x;
    }
    const float bound = kb == k ? top[0] : -std::numeric_limits<float>::infinity();
    // Candidates: every logit >= bound of the blocks that reach it, gathered without branches
    // (buf holds n_blocks * kSoftmaxStatsBlock floats).
    size_t count = 0;
    for (int64_t b = 0; b < n_blocks; ++b) {
        if (block_max[b] < bound) continue;
        const int64_t j1 = std::min(n, (b + 1) * kSoftmaxStatsBlock);
        for (int64_t j = b * kSoftmaxStatsBlock; j < j1; ++j) {
            buf[count] = s[j];
            count += s[j] >= bound ? 1 : 0;
        }
    }
    const size_t kk = std::min(count, size_t(k));
    if (kk < count) std::nth_element(buf, buf + (kk - 1), buf + count, std::greater<>());
    double mass = 0;
    for (size_t i = 0; i < kk; ++i) mass += double(std::exp(buf[i] - lse));
    return mass;
}

// One head's sparsity from its row of logits s (n keys, the first at position `first`) and its
// log-sum-exp: one fused pass (VecMath::softmax_stats) gives p = exp(s - lse), Σp, Σ p s, the
// keys below the threshold (p < thr, i.e. s < lse + log(thr)) and the block maxima the top-k
// search uses. Entropy H = -Σ p (s - lse) = lse Σp - Σ p s.
HeadSparsity head_sparsity(const VecMath& vm, const float* s, int64_t n, int64_t first, float lse,
                           const AttentionCapture& capture, float* p, float* block_max,
                           float* top_buf) {
    const SoftmaxStats st =
        vm.softmax_stats(s, n, lse, lse + std::log(capture.threshold), p, block_max);
    HeadSparsity h;
    h.entropy = std::max(0.0f, lse * st.sum_p - st.sum_ps);
    h.top_k_mass = float(top_k_mass(s, block_max, n, lse, capture.top_k, top_buf));
    h.below_threshold = n > 0 ? float(double(st.below) / double(n)) : 0.0f;
    double sink = 0;
    for (int64_t pos = first; pos < std::min(kSinkKeys, first + n); ++pos) sink += p[pos - first];
    h.sink_mass = float(sink);
    return h;
}

}  // namespace

std::span<const float> KeyScores::get(int64_t layer, int64_t kv_head, int64_t seq) const {
    if (layer < 0 || layer >= int64_t(layers_.size())) return {};
    const Layer& L = layers_[size_t(layer)];
    if (L.scores.empty() || kv_head < 0 || kv_head >= L.n_head_kv || seq < 0 || seq >= L.n_seq)
        return {};
    return {L.scores.data() + (kv_head * L.n_seq + seq) * L.n_ctx, size_t(L.n_ctx)};
}

float* KeyScores::row(const KvShape& shape, int64_t layer, int64_t kv_head, int64_t seq) {
    if (int64_t(layers_.size()) <= layer) layers_.resize(size_t(layer + 1));
    Layer& L = layers_[size_t(layer)];
    // A cache of another shape (a new model load, an evaluation's next cache) starts afresh:
    // rows are laid out by the shape, and a larger one must never index past the old buffer.
    if (L.n_head_kv != shape.n_head_kv[size_t(layer)] || L.n_seq != shape.n_seq ||
        L.n_ctx != shape.n_ctx)
        L.scores.clear();
    if (L.scores.empty()) {
        L.n_head_kv = shape.n_head_kv[size_t(layer)];
        L.n_seq = shape.n_seq;
        L.n_ctx = shape.n_ctx;
        L.scores.assign(size_t(L.n_head_kv * L.n_seq * L.n_ctx), 0.0f);
    }
    return L.scores.data() + (kv_head * L.n_seq + seq) * L.n_ctx;
}

void KeyScores::forget(int64_t layer, const Batch& batch) {
    if (layer >= int64_t(layers_.size())) return;
    Layer& L = layers_[size_t(layer)];
    if (L.scores.empty()) return;
    for (int64_t t = 0; t < batch.size(); ++t) {
        const int64_t seq = batch.seq_ids[size_t(t)], pos = batch.positions[size_t(t)];
        if (seq >= L.n_seq || pos >= L.n_ctx) continue;  // another cache's shape: row() resets
        for (int64_t h = 0; h < L.n_head_kv; ++h)
            L.scores[size_t((h * L.n_seq + seq) * L.n_ctx + pos)] = 0.0f;
    }
}

void KeyScores::compact(int64_t seq, std::span<const int64_t> keep) {
    for (Layer& L : layers_) {
        if (L.scores.empty() || seq < 0 || seq >= L.n_seq) continue;
        for (int64_t h = 0; h < L.n_head_kv; ++h) {
            float* row = L.scores.data() + (h * L.n_seq + seq) * L.n_ctx;
            for (size_t i = 0; i < keep.size() && int64_t(i) < L.n_ctx; ++i)
                row[i] = keep[i] < L.n_ctx ? row[keep[i]] : 0.0f;
            std::fill(row + std::min<int64_t>(int64_t(keep.size()), L.n_ctx), row + L.n_ctx, 0.0f);
        }
    }
}

bool wants_rows(const AttentionCapture& c, int64_t layer) {
    for (const AttentionCaptureRegion& r : c.regions)
        if (r.layer < 0 || r.layer == layer) return true;
    return false;
}

void capture_rows(const AttentionParams& p, const Act& q, const Batch& batch, const KvCache& kv,
                  const AttentionScratch& scratch, AttentionCapture& capture) {
    const KvType type = kv.shape().type.k;  // the readout reads keys only
    const VecMath& vm = vec_math();
    const int64_t group = p.n_head / p.n_head_kv, dk = p.head_dim_k;
    std::vector<float> qh(static_cast<size_t>(dk));
    for (const AttentionCaptureRegion& r : capture.regions) {
        if (r.layer >= 0 && r.layer != p.layer) continue;
        if (r.head >= p.n_head) continue;  // a head this layer lacks
        const int64_t h_begin = r.head < 0 ? 0 : r.head, h_end = r.head < 0 ? p.n_head : r.head + 1;
        const int64_t t_begin = r.rows > 0 ? std::max<int64_t>(0, batch.size() - r.rows) : 0;
        for (int64_t t = t_begin; t < batch.size(); ++t) {
            const int64_t pos = batch.positions[size_t(t)], seq = batch.seq_ids[size_t(t)];
            const KeyRange keys = key_range(p, pos);
            const int64_t kb = std::max<int64_t>(0, r.key_begin);
            const int64_t ke = r.key_end > 0 ? r.key_end : pos + 1;
            const int64_t lo = std::max(kb, keys.first), hi = std::min(ke, pos + 1);
            for (int64_t h = h_begin; h < h_end; ++h) {
                CapturedAttentionRow row;
                row.id = r.id;
                row.layer = int32_t(p.layer);
                row.head = int32_t(h);
                row.seq = seq;
                row.pos = pos;
                row.key_begin = kb;
                row.weights.assign(size_t(std::max<int64_t>(0, ke - kb)), 0.0f);
                if (lo < hi) {
                    const float* qrow = q.data + t * q.width + h * dk;
                    if (type == KvType::F16)
                        vm.round_f16(qrow, qh.data(), dk);
                    else
                        std::copy(qrow, qrow + dk, qh.data());
                    float* w = row.weights.data() + (lo - kb);
                    const int64_t kvh = h / group;
                    for (int64_t j = lo; j < hi;) {
                        const KvHeadRows k =
                            head_rows(type, kv.k_run(p.layer, seq, j, hi - j), kvh);
                        vm.qk(k.elem, qh.data(), 1, dk, k.data, k.stride, k.rows, p.scale,
                              w + (j - lo), hi - lo);
                        j += k.rows;
                    }
                    if (p.softcap > 0) vm.softcap(w, hi - lo, p.softcap);
                    vm.exp_sub_sum(w, hi - lo, scratch.lse[size_t(t * p.n_head + h)]);
                }
                capture.rows.push_back(std::move(row));
            }
        }
    }
}

void compute_sparsity(ThreadPool& pool, const AttentionParams& p, const Batch& batch,
                      const KvShape& shape, AttentionScratch& scratch, AttentionCapture& capture,
                      KeyScores& key_scores) {
    if (capture.top_k < 0 || capture.top_k > kMaxTopK)
        throw Error("attention capture: top_k must be 0.." + std::to_string(kMaxTopK) + ", not " +
                    std::to_string(capture.top_k));
    const VecMath& vm = vec_math();
    const int64_t t = batch.size() - 1, group = p.n_head / p.n_head_kv;
    const int64_t pos = batch.positions[size_t(t)], seq = batch.seq_ids[size_t(t)];
    const KeyRange keys = key_range(p, pos);
    const int64_t n = keys.count;
    // Per query head: n probabilities, then the block maxima; per worker: top-k candidates.
    const int64_t n_blocks = (shape.n_ctx + kSoftmaxStatsBlock - 1) / kSoftmaxStatsBlock;
    const int64_t stride = shape.n_ctx + n_blocks, top_stride = n_blocks * kSoftmaxStatsBlock;
    if (int64_t(scratch.readout.size()) < stride * p.n_head)
        scratch.readout.resize(size_t(stride * p.n_head));
    if (int64_t(scratch.top_k.size()) < top_stride * pool.size())
        scratch.top_k.resize(size_t(top_stride * pool.size()));
    LayerSparsity ls;
    ls.layer = int32_t(p.layer);
    ls.seq = seq;
    ls.pos = pos;
    ls.n_keys = n;
    ls.heads.resize(size_t(p.n_head));
    const auto head = [&](int64_t h, int worker) {
        float* probs = scratch.readout.data() + h * stride;
        ls.heads[size_t(h)] =
            head_sparsity(vm, scratch.stash.data() + h * scratch.stash_stride, n, keys.first,
                          scratch.lse[size_t(t * p.n_head + h)], capture, probs,
                          probs + shape.n_ctx, scratch.top_k.data() + worker * top_stride);
    };
    // A readout of a few thousand logits costs less than waking the pool (it runs every decode
    // step of every layer while statistics are on).
    if (p.n_head * n <= kSerialReadoutFloats) {
        for (int64_t h = 0; h < p.n_head; ++h) head(h, 0);
    } else {
        pool.run(p.n_head, head);
    }
    for (int64_t h = 0; h < p.n_head; ++h)  // H2O: each KV head's query heads, summed
        vm.add(key_scores.row(shape, p.layer, h / group, seq) + keys.first,
               scratch.readout.data() + h * stride, n);
    capture.sparsity.push_back(std::move(ls));
}

}  // namespace fluoro::cpu
