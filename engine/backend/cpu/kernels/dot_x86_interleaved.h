// Internal to the CPU kernels: the row-group kernels for interleaved weights (interleave.h), x86.
// Included by dot_avx2.cpp and dot_avx512.cpp inside their target regions; built on the helpers
// of dot_x86_kernels.h.
//
// Q4_1x4 against Q8_1: per group block, one vcvtph2ps converts the four rows' scales and
// minimums; the quants of rows 0|1 and 2|3 fill two 256-bit registers, each 128-bit half one row,
// against the activation block's 16 + 16 bytes broadcast to both halves. vphaddd folds the four
// rows' int32 sums into [r0 r0 r2 r2 | r1 r1 r3 r3] and one FMA applies the four scales:
//   v += (d_r · d_x) · Σ q_w·q_x      two lanes per row, each the sum of 16 products
//   s += m_r · s_x                     the minimum's term (ggml's summs)
// and a row's result is its two v lanes plus its s lane. The integer sums are exact, so
// vpdpbusd (AVX-512 VNNI) and maddubs + madd (AVX2) give the same bits. Every token runs the
// same operations whatever the tile, so prefill, decode and speculative verification agree.
// Against the GGUF-layout kernels only the float order differs (2 lanes per row instead of 8).
#pragma once

#include "backend/cpu/kernels/dot_x86_kernels.h"
#include "backend/cpu/kernels/interleave.h"

namespace fluoro::cpu::detail {
namespace {
namespace x86 {

struct Q4_1x4Prep {
    __m256i lo01, hi01, lo23, hi23;  // elements 0..15 / 16..31 of rows 0|1 and 2|3
    __m256 d, m;                     // [d0 d0 d2 d2 | d1 d1 d3 d3], the minimums alike
};

struct Q4_1x4Acc {
    __m256 v;
    __m256 s;
};

inline Q4_1x4Prep q4_1x4_prep(const BlockQ4_1x4& b) {
    const __m256 dm = _mm256_cvtph_ps(load128(b.d));  // d0 d1 d2 d3 m0 m1 m2 m3
    const __m256i mask = _mm256_set1_epi8(0x0F);
    const __m256i q01 = load256(b.qs[0]);
    const __m256i q23 = load256(b.qs[2]);
    return {_mm256_and_si256(q01, mask),
            _mm256_and_si256(_mm256_srli_epi16(q01, 4), mask),
            _mm256_and_si256(q23, mask),
            _mm256_and_si256(_mm256_srli_epi16(q23, 4), mask),
            _mm256_permutevar8x32_ps(dm, _mm256_setr_epi32(0, 0, 2, 2, 1, 1, 3, 3)),
            _mm256_permutevar8x32_ps(dm, _mm256_setr_epi32(4, 4, 6, 6, 5, 5, 7, 7))};
}

// Σ of 8 products per int32 lane: lane j of each half = lo[4j..4j+3]·x_lo + hi[4j..4j+3]·x_hi.
inline __m256i q4_1x4_sums(__m256i lo, __m256i hi, __m256i x_lo, __m256i x_hi) {
#if FLUORO_DOT_VNNI
    return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), lo, x_lo), hi, x_hi);
#else
    // int16 lanes: two products each from lo and hi, |.| <= 4 * 15 * 127, no saturation
    const __m256i pairs =
        _mm256_add_epi16(_mm256_maddubs_epi16(lo, x_lo), _mm256_maddubs_epi16(hi, x_hi));
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
#endif
}

inline void q4_1x4_accumulate(const Q4_1x4Prep& p, const BlockQ8_1& x, Q4_1x4Acc& acc) {
    const __m256i x_lo = _mm256_broadcastsi128_si256(load128(x.qs));
    const __m256i x_hi = _mm256_broadcastsi128_si256(load128(x.qs + 16));
    const __m256i sum = _mm256_hadd_epi32(q4_1x4_sums(p.lo01, p.hi01, x_lo, x_hi),
                                          q4_1x4_sums(p.lo23, p.hi23, x_lo, x_hi));
    const __m128 ds = fp16_pair(&x.d);  // d_x, s_x
    const __m256 d_x = _mm256_broadcastss_ps(ds);
    const __m256 s_x = _mm256_broadcastss_ps(_mm_movehdup_ps(ds));
    acc.v = _mm256_fmadd_ps(_mm256_mul_ps(p.d, d_x), _mm256_cvtepi32_ps(sum), acc.v);
    acc.s = _mm256_fmadd_ps(p.m, s_x, acc.s);
}

// out[r * kMaxDotRows + t] for the group's rows r = 0..3.
inline void q4_1x4_finish(const Q4_1x4Acc& acc, float* out) {
    alignas(32) float v[8], s[8];
    _mm256_store_ps(v, acc.v);
    _mm256_store_ps(s, acc.s);
    constexpr int kLane[kGroupRows] = {0, 4, 2, 6};  // row r's first lane
    for (int r = 0; r < kGroupRows; ++r) {
        const int l = kLane[r];
        out[r * kMaxDotRows] = (v[l] + v[l + 1]) + s[l];
    }
}

template <int NX>
void q4_1x4_tile(const BlockQ4_1x4* w, const std::byte* x, size_t x_stride, int64_t n_blocks,
                 float* out) {
    const BlockQ8_1* xs[NX];
    Q4_1x4Acc acc[NX];
    for (int t = 0; t < NX; ++t) {
        xs[t] = reinterpret_cast<const BlockQ8_1*>(x + size_t(t) * x_stride);
        acc[t] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
        prefetch_ahead(w + b);
        const Q4_1x4Prep p = q4_1x4_prep(w[b]);
        for (int t = 0; t < NX; ++t) q4_1x4_accumulate(p, xs[t][b], acc[t]);
    }
    for (int t = 0; t < NX; ++t) q4_1x4_finish(acc[t], out + t);
}

// Tiles of up to 4 tokens: 2 accumulators each, so 4 tokens and a block's prep fit AVX2's 16
// registers.
inline void q4_1x4_group_dot(const void* w_group, const void* x, size_t x_stride, int n_x,
                             int64_t n, float* out) {
    const auto* w = static_cast<const BlockQ4_1x4*>(w_group);
    const auto* xb = static_cast<const std::byte*>(x);
    const int64_t nb = n / kQK;
    for (int t0 = 0; t0 < n_x; t0 += 4) {
        const std::byte* xt = xb + size_t(t0) * x_stride;
        switch (n_x - t0 < 4 ? n_x - t0 : 4) {
            case 1:
                q4_1x4_tile<1>(w, xt, x_stride, nb, out + t0);
                break;
            case 2:
                q4_1x4_tile<2>(w, xt, x_stride, nb, out + t0);
                break;
            case 3:
                q4_1x4_tile<3>(w, xt, x_stride, nb, out + t0);
                break;
            default:
                q4_1x4_tile<4>(w, xt, x_stride, nb, out + t0);
                break;
        }
    }
}

inline void set_x86_group_kernels(GroupDotTable& table) {
    table[static_cast<size_t>(GgmlType::Q4_1)] = &q4_1x4_group_dot;
}

}  // namespace x86
}  // namespace
}  // namespace fluoro::cpu::detail
