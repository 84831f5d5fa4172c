// Conversion of cached K/V rows between float and the cache's storage type (kv/kv_cache.h
// KvType): the only place that knows how a row is encoded, used by store_kv and the key
// re-rotation of compaction (kv_rope_shift); attention reads the rows in place (head_rows).
//
// Q8_0 and Q4_0 rows are ggml's blocks, quantized by the reference quantizers of engine/tensor
// (ggml's quantize_row_q8_0_ref / quantize_row_q4_0_ref, byte for byte) and dequantized exactly
// (d·q is exact in float32: an 11-bit fp16 scale times an integer of at most 8 bits). Per block of
// 32 values with d the unrounded scale the quantizer computes and d_h = fp16(d) the stored one,
// every reconstructed value x̂ satisfies (kv_quant_test.cpp checks it):
//   Q8_0 (d = max|x|/127, q = round(x/d)):           |x − x̂| ≤ |d|/2 + 127·|d − d_h|
//   Q4_0 (d = −m/8, m the value of largest |x|,
//         q = min(15, trunc(x/d + 8.5)) − 8):          |x − x̂| ≤ |d|   + 8·|d − d_h|
// plus float32 rounding of x/d (a few ulps of d). Q4_0's bound is reached by a block holding
// both m and −m (x/d = 8 is clamped to q = 7); values of |x/d| ≤ 7.5 stay within |d|/2. In fp16's
// normal range |d − d_h| ≤ 2⁻¹¹|d|, i.e. at most 0.563·|d| (Q8_0) and 1.004·|d| (Q4_0). Values
// must be finite with max|x| below 65504·127 (Q8_0) or 65504·8 (Q4_0), or d_h overflows to inf.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/kernels/vec_math.h"
#include "kv/kv_cache.h"

namespace fluoro::cpu {

// n values (a multiple of kKvQuantBlock for quantized types) from float to type t at dst.
void kv_store(KvType t, const float* src, void* dst, int64_t n);
// n values of type t at src to float.
void kv_load(KvType t, const void* src, float* dst, int64_t n);
// `rows` rows of `elems` values of type t, row r at src + r * stride bytes, to float: row r at
// dst + r * elems.
void kv_load_rows(KvType t, const std::byte* src, size_t stride, int64_t rows, int64_t elems,
                  float* dst);

// How attention reads one head of cached rows: every type goes to the VecMath kernels in place
// (kernels/vec_math.h), quantized rows dequantized in registers, block by block, with the same
// arithmetic as kv_load_rows (so the scores are those of the dequantized rows, bit for bit).
inline KvElem kv_elem(KvType t) {
    switch (t) {
        case KvType::F16:
            return KvElem::F16;
        case KvType::Q8_0:
            return KvElem::Q8_0;
        case KvType::Q4_0:
            return KvElem::Q4_0;
        case KvType::F32:
            break;
    }
    return KvElem::F32;
}

struct KvHeadRows {
    KvElem elem = KvElem::F32;
    const std::byte* data = nullptr;  // row r at data + r * stride
    size_t stride = 0;
    int64_t rows = 0;
};

// The run's rows of KV head kvh.
inline KvHeadRows head_rows(KvType t, const KvCache::Run& run, int64_t kvh) {
    return KvHeadRows{kv_elem(t), run.data + size_t(kvh) * run.head_stride, run.stride, run.rows};
}

}  // namespace fluoro::cpu
