// ggml's reference quantizers (ggml-quants.c quantize_row_*_ref), one block at a time. The
// float expressions keep ggml's order of operations, so the bytes are identical to what
// llama.cpp writes. Where ggml's C cast would be undefined (NaN, out-of-range values) the
// result is clamped instead; every finite input gives ggml's bytes.
#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "tensor/block_kernels.h"
#include "tensor/fp16.h"

namespace fluoro::detail {
namespace {

constexpr int kHalf = kQK / 2;

// The element with the largest |x| (the first on ties), sign kept: the scale takes its sign so
// that this element lands on the most negative quant level.
float signed_absmax(const float* x, int n) {
    float amax = 0.0f;
    float max = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

// max |x|, written as ggml's MAX(amax, fabsf(v)) so that a NaN propagates the same way.
float absmax(const float* x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; ++j) amax = amax > std::fabs(x[j]) ? amax : std::fabs(x[j]);
    return amax;
}

struct Range {
    float min = FLT_MAX;
    float max = -FLT_MAX;
};

Range min_max(const float* x, int n) {
    Range r;
    for (int j = 0; j < n; ++j) {
        if (x[j] < r.min) r.min = x[j];
        if (x[j] > r.max) r.max = x[j];
    }
    return r;
}

float inverse_or_zero(float d) {
    return d != 0.0f ? 1.0f / d : 0.0f;
}

// ggml's MIN(hi, (int8_t)v): truncation toward zero, kept within [0, hi].
int truncate_clamped(float v, int hi) {
    if (std::isnan(v)) return 0;
    return static_cast<int>(std::clamp(std::trunc(v), 0.0f, static_cast<float>(hi)));
}

// ggml's (int8_t)roundf(v): nearest, ties away from zero.
int8_t round_to_int8(float v) {
    if (std::isnan(v)) return 0;
    return static_cast<int8_t>(std::clamp(std::round(v), -128.0f, 127.0f));
}

// ggml's nearest_int: round to nearest, ties to even, by adding 1.5 * 2^23 (needs |v| < 2^22).
int nearest_int(float v) {
    const float shifted = v + 12582912.0f;
    return static_cast<int>(std::bit_cast<uint32_t>(shifted) & 0x007FFFFFu) - 0x00400000;
}

// Q5_0/Q5_1 share the packing of 32 5-bit quants: low nibbles as Q4_0, 5th bits in qh.
void pack_5bit(const int* q, uint8_t* qs, uint8_t* qh) {
    uint32_t high_bits = 0;
    for (int j = 0; j < kHalf; ++j) {
        qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + kHalf] & 0x0F) << 4));
        high_bits |= static_cast<uint32_t>(q[j] >> 4) << j;
        high_bits |= static_cast<uint32_t>(q[j + kHalf] >> 4) << (j + kHalf);
    }
    std::memcpy(qh, &high_bits, sizeof(high_bits));
}

}  // namespace

// d = -max/8 maps the largest-magnitude element to level 0; q = x/d + 8, truncated after +0.5.
void quantize_block(const float* x, BlockQ4_0& out) {
    const float d = signed_absmax(x, kQK) / -8;
    const float id = inverse_or_zero(d);
    out.d = fp32_to_fp16(d);
    for (int j = 0; j < kHalf; ++j) {
        const float x0 = x[j] * id;
        const float x1 = x[j + kHalf] * id;
        const int q0 = truncate_clamped(x0 + 8.5f, 15);
        const int q1 = truncate_clamped(x1 + 8.5f, 15);
        out.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
}

// 16 levels spanning [min, max].
void quantize_block(const float* x, BlockQ4_1& out) {
    const Range r = min_max(x, kQK);
    const float d = (r.max - r.min) / 15;
    const float id = inverse_or_zero(d);
    out.d = fp32_to_fp16(d);
    out.m = fp32_to_fp16(r.min);
    for (int j = 0; j < kHalf; ++j) {
        const float x0 = (x[j] - r.min) * id;
        const float x1 = (x[j + kHalf] - r.min) * id;
        const int q0 = truncate_clamped(x0 + 0.5f, 15);
        const int q1 = truncate_clamped(x1 + 0.5f, 15);
        out.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
}

void quantize_block(const float* x, BlockQ5_0& out) {
    const float d = signed_absmax(x, kQK) / -16;
    const float id = inverse_or_zero(d);
    out.d = fp32_to_fp16(d);
    int q[kQK];
    for (int j = 0; j < kQK; ++j) {
        const float xj = x[j] * id;
        q[j] = truncate_clamped(xj + 16.5f, 31);
    }
    pack_5bit(q, out.qs, out.qh);
}

void quantize_block(const float* x, BlockQ5_1& out) {
    const Range r = min_max(x, kQK);
    const float d = (r.max - r.min) / 31;
    const float id = inverse_or_zero(d);
    out.d = fp32_to_fp16(d);
    out.m = fp32_to_fp16(r.min);
    int q[kQK];
    for (int j = 0; j < kQK; ++j) {
        const float xj = (x[j] - r.min) * id;
        q[j] = truncate_clamped(xj + 0.5f, 31);
    }
    pack_5bit(q, out.qs, out.qh);
}

void quantize_block(const float* x, BlockQ8_0& out) {
    const float d = absmax(x, kQK) / 127;
    const float id = inverse_or_zero(d);
    out.d = fp32_to_fp16(d);
    for (int j = 0; j < kQK; ++j) out.qs[j] = round_to_int8(x[j] * id);
}

// As Q8_0, plus s = d * sum(q) rounded to fp16 (d unrounded, as ggml).
void quantize_block(const float* x, BlockQ8_1& out) {
    const float d = absmax(x, kQK) / 127;
    const float id = inverse_or_zero(d);
    out.d = fp32_to_fp16(d);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
        out.qs[j] = round_to_int8(x[j] * id);
        sum += out.qs[j];
    }
    out.s = fp32_to_fp16(static_cast<float>(sum) * d);
}

// Scale -127/max (so the largest-magnitude element becomes -127), ties to even, d = 1/scale
// kept as float32; bsums hold the sums of each 16 quants. An all-zero block is all zeros.
void quantize_block(const float* x, BlockQ8_K& out) {
    out = BlockQ8_K{};
    const float max = signed_absmax(x, kQK_K);
    if (max == 0.0f) return;
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j)
        out.qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[j])));
    for (int g = 0; g < kQK_K / 16; ++g) {
        int sum = 0;
        for (int l = 0; l < 16; ++l) sum += out.qs[16 * g + l];
        out.bsums[g] = static_cast<int16_t>(sum);
    }
    out.d = 1 / iscale;
}

}  // namespace fluoro::detail
