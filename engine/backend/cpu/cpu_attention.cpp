#include "backend/cpu/cpu_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "tensor/fp16.h"

namespace fluoro::cpu {
namespace {

// fp16 -> fp32 by table (256 KiB, built once): the attention inner loop converts every cached
// K and V element, and this keeps that to a load.
const float* fp16_table() {
    static const std::vector<float> table = [] {
        std::vector<float> t(65536);
        for (uint32_t i = 0; i < 65536; ++i) t[i] = fp16_to_fp32(uint16_t(i));
        return t;
    }();
    return table.data();
}

// q·k over d elements for one head; k in the cache type. With an F16 cache q is rounded to
// fp16 first, as ggml's F16 mat-mul does (its vec_dot_type for F16 is F16).
float dot_qk(const float* q, const void* k, int64_t d, KvType type, const float* lut) {
    float sum = 0.0f;
    if (type == KvType::F32) {
        const float* kf = static_cast<const float*>(k);
        for (int64_t i = 0; i < d; ++i) sum += q[i] * kf[i];
    } else {
        const uint16_t* kh = static_cast<const uint16_t*>(k);
        for (int64_t i = 0; i < d; ++i) sum += q[i] * lut[kh[i]];
    }
    return sum;
}

void axpy_v(float* out, float w, const void* v, int64_t d, KvType type, const float* lut) {
    if (type == KvType::F32) {
        const float* vf = static_cast<const float*>(v);
        for (int64_t i = 0; i < d; ++i) out[i] += w * vf[i];
    } else {
        const uint16_t* vh = static_cast<const uint16_t*>(v);
        for (int64_t i = 0; i < d; ++i) out[i] += w * lut[vh[i]];
    }
}

void store_row(const float* src, void* dst, int64_t n, KvType type) {
    if (type == KvType::F32) {
        std::memcpy(dst, src, size_t(n) * sizeof(float));
        return;
    }
    uint16_t* h = static_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(src[i]);
}

}  // namespace

void store_kv(ThreadPool& pool, const AttentionParams& p, const Act& k, const Act& v,
              const Batch& batch, KvCache& kv) {
    const KvType type = kv.shape().type;
    const int64_t nk = p.n_head_kv * p.head_dim_k, nv = p.n_head_kv * p.head_dim_v;
    // Resolve row pointers serially (they validate positions and may throw), then convert.
    pool.run(batch.size(), [&](int64_t t, int) {
        const int64_t seq = batch.seq_ids[size_t(t)], pos = batch.positions[size_t(t)];
        store_row(k.data + t * k.width, kv.k_row(p.layer, seq, pos), nk, type);
        store_row(v.data + t * v.width, kv.v_row(p.layer, seq, pos), nv, type);
    });
}

void attend(ThreadPool& pool, const AttentionParams& p, const Act& q, const Batch& batch,
            const KvCache& kv, Act out, float* scratch, int64_t scratch_per_worker) {
    const KvType type = kv.shape().type;
    const float* lut = fp16_table();
    const int64_t group = p.n_head / p.n_head_kv;
    const int64_t dk = p.head_dim_k, dv = p.head_dim_v;
    pool.run(batch.size() * p.n_head_kv, [&](int64_t task, int worker) {
        const int64_t t = task / p.n_head_kv, kvh = task % p.n_head_kv;
        const int64_t seq = batch.seq_ids[size_t(t)], pos = batch.positions[size_t(t)];
        const int64_t lo = p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0;
        const int64_t n_keys = pos - lo + 1;
        float* scores = scratch + worker * scratch_per_worker;  // (group, n_keys)
        float* qh = scores + group * n_keys;                    // (group, dk) rounded queries
        for (int64_t g = 0; g < group; ++g) {
            const float* qrow = q.data + t * q.width + (kvh * group + g) * dk;
            for (int64_t i = 0; i < dk; ++i)
                qh[g * dk + i] =
                    type == KvType::F16 ? fp16_to_fp32(fp32_to_fp16(qrow[i])) : qrow[i];
        }
        const size_t k_off = size_t(kvh * dk) * kv_type_size(type);
        const size_t v_off = size_t(kvh * dv) * kv_type_size(type);
        // Each key row is loaded once for all query heads of its group.
        for (int64_t j = 0; j < n_keys; ++j) {
            const auto* krow =
                static_cast<const std::byte*>(kv.k_row(p.layer, seq, lo + j)) + k_off;
            for (int64_t g = 0; g < group; ++g) {
                float x = dot_qk(qh + g * dk, krow, dk, type, lut) * p.scale;
                if (p.softcap > 0) x = p.softcap * std::tanh(x / p.softcap);
                scores[g * n_keys + j] = x;
            }
        }
        for (int64_t g = 0; g < group; ++g) {
            float* s = scores + g * n_keys;
            const float max = *std::max_element(s, s + n_keys);
            double sum = 0.0;
            for (int64_t j = 0; j < n_keys; ++j) {
                s[j] = std::exp(s[j] - max);
                sum += s[j];
            }
            const float inv = float(1.0 / sum);
            // With an F16 cache the probabilities are rounded to fp16 too, as ggml's F16 mat-mul
            // of V by the softmax does (it converts its f32 operand to the weight type, f16).
            if (type == KvType::F16)
                for (int64_t j = 0; j < n_keys; ++j) s[j] = fp16_to_fp32(fp32_to_fp16(s[j] * inv));
            else
                for (int64_t j = 0; j < n_keys; ++j) s[j] *= inv;
            float* o = out.data + t * out.width + (kvh * group + g) * dv;
            std::fill(o, o + dv, 0.0f);
        }
        for (int64_t j = 0; j < n_keys; ++j) {
            const auto* vrow =
                static_cast<const std::byte*>(kv.v_row(p.layer, seq, lo + j)) + v_off;
            for (int64_t g = 0; g < group; ++g) {
                float* o = out.data + t * out.width + (kvh * group + g) * dv;
                axpy_v(o, scores[g * n_keys + j], vrow, dv, type, lut);
            }
        }
    });
}

}  // namespace fluoro::cpu
