// Internal to the CPU kernels: the row-group kernels for interleaved weights (interleave.h), x86.
// Included by dot_avx2.cpp and dot_avx512.cpp inside their target regions; built on the helpers
// of dot_x86_kernels.h.
//
// Per group block, one conversion handles the four rows' fp16 scales (and Q4_1's minimums); the
// quants of rows 0|1 and 2|3 fill two 256-bit registers per 16 elements, each 128-bit half one
// row, against the activation block's 16 + 16 bytes broadcast to both halves. A horizontal add
// (fold_group) folds the four rows' sums into [r0 r0 r2 r2 | r1 r1 r3 r3] and one FMA applies the
// four scales:
//   v += (d_r · d_x) · Σ q_w·q_x      two lanes per row, each the sum of 16 products
//   v += m_r · s_x                     Q4_1 only, in one of the row's lanes: the minimum's term
// and a row's result is the sum of its two lanes. The activations' scales come as floats
// (BlockQ8_1Wide / BlockQ8_0Wide), broadcast from memory. The integer sums are exact, so
// vpdpbusd (AVX-512 VNNI) and maddubs + madd (AVX2) give the same bits. Every token runs the
// same operations whatever the tile, so prefill, decode and speculative verification agree.
// Against the GGUF-layout kernels only the float order differs (2 lanes per row instead of 8).
#pragma once

#include "backend/cpu/kernels/dot_x86_kernels.h"
#include "backend/cpu/kernels/interleave.h"

namespace fluoro::cpu::detail {
namespace {
namespace x86 {

// Row r's first lane in the [r0 r0 r2 r2 | r1 r1 r3 r3] layout of the folded sums.
inline constexpr int kGroupLane[kGroupRows] = {0, 4, 2, 6};

// The four rows' scales (converted, in row order) in the folded sums' layout.
inline __m256 group_scales(__m256 converted) {
    return _mm256_permutevar8x32_ps(converted, _mm256_setr_epi32(0, 0, 2, 2, 1, 1, 3, 3));
}

// Unsigned a times signed b, not yet widened: each int16 lane is two products from lo plus two
// from hi.
inline __m256i pair_sums(__m256i a_lo, __m256i b_lo, __m256i a_hi, __m256i b_hi) {
    return _mm256_add_epi16(_mm256_maddubs_epi16(a_lo, b_lo), _mm256_maddubs_epi16(a_hi, b_hi));
}

// Σ of 8 products per int32 lane, unsigned a times signed b: lane j of each half is
// a_lo[4j..4j+3]·b_lo + a_hi[4j..4j+3]·b_hi. kSmallA: a <= 16, so that AVX2 may add the two
// halves' int16 pair sums before widening them.
template <bool kSmallA>
inline __m256i sum_halves(__m256i a_lo, __m256i b_lo, __m256i a_hi, __m256i b_hi) {
#if FLUORO_DOT_VNNI
    return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), a_lo, b_lo), a_hi, b_hi);
#else
    const __m256i ones = _mm256_set1_epi16(1);
    if constexpr (kSmallA) {
        // int16 lanes: two products each from lo and hi; a <= 15 (Q4_1's nibbles) or 16 (Q5_0's
        // |w|) and |b| <= 127, so |.| <= 4 * 16 * 127 = 8128: no saturation
        return _mm256_madd_epi16(pair_sums(a_lo, b_lo, a_hi, b_hi), ones);
    } else {
        // a <= 128 (Q8_0's |w|, -128 included): one maddubs pair is at most 2 * 128 * 127 = 32512,
        // two would overflow int16, so each widens on its own
        return _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(a_lo, b_lo), ones),
                                _mm256_madd_epi16(_mm256_maddubs_epi16(a_hi, b_hi), ones));
    }
#endif
}

// The four rows' sums folded into [r0 r0 r2 r2 | r1 r1 r3 r3] (int32), each lane 16 products:
// rows 0|1 (a01 against b01) and 2|3 (a23 against b23), elements 0..15 (lo) and 16..31 (hi).
template <bool kSmallA>
inline __m256i fold_group(__m256i a01_lo, __m256i b01_lo, __m256i a01_hi, __m256i b01_hi,
                          __m256i a23_lo, __m256i b23_lo, __m256i a23_hi, __m256i b23_hi) {
#if !FLUORO_DOT_VNNI
    if constexpr (kSmallA) {
        // Fold in int16 and widen once: each int16 lane of a pair sum is 4 products, |.| <= 8128
        // (sum_halves), so vphaddw's sums stay <= 16256. The same integers as the int32 fold
        // below, with one vpmaddwd per token instead of two.
        return _mm256_madd_epi16(_mm256_hadd_epi16(pair_sums(a01_lo, b01_lo, a01_hi, b01_hi),
                                                   pair_sums(a23_lo, b23_lo, a23_hi, b23_hi)),
                                 _mm256_set1_epi16(1));
    }
#endif
    return _mm256_hadd_epi32(sum_halves<kSmallA>(a01_lo, b01_lo, a01_hi, b01_hi),
                             sum_halves<kSmallA>(a23_lo, b23_lo, a23_hi, b23_hi));
}

// Low nibbles (elements 0..15) and high nibbles (16..31) of two rows' 16 quant bytes each.
inline void unpack_row_pair(const uint8_t* qs, __m256i& lo, __m256i& hi) {
    const __m256i mask = _mm256_set1_epi8(0x0F);
    const __m256i q = load256(qs);
    lo = _mm256_and_si256(q, mask);
    hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), mask);
}

// ---- Q4_1x4 against Q8_1 (widened scales) ----

struct Q4_1x4Simd {
    using WBlock = BlockQ4_1x4;
    using XBlock = BlockQ8_1Wide;
    struct Prep {
        __m256i lo01, hi01, lo23, hi23;  // elements 0..15 / 16..31 of rows 0|1 and 2|3
        __m256 d;                        // folded layout
        __m256 m;                        // the minimums in one lane per row, zero in the other
    };
    struct Acc {
        __m256 v;
    };
    static Prep prep(const WBlock& b) {
        Prep p;
        // [d0 d2 m0 m2 | d1 d3 m1 m3] (interleave.h's order) -> [d0 d0 d2 d2 | d1 d1 d3 d3] and
        // [m0 0 m2 0 | m1 0 m3 0]
        const __m256 dm = _mm256_cvtph_ps(load128(b.dm));
        p.d = _mm256_unpacklo_ps(dm, dm);
        p.m = _mm256_unpackhi_ps(dm, _mm256_setzero_ps());
        unpack_row_pair(b.qs[0], p.lo01, p.hi01);
        unpack_row_pair(b.qs[2], p.lo23, p.hi23);
        return p;
    }
    static void accumulate(const Prep& p, const XBlock& x, Acc& acc) {
        const __m256i x_lo = _mm256_broadcastsi128_si256(load128(x.qs));
        const __m256i x_hi = _mm256_broadcastsi128_si256(load128(x.qs + 16));
        const __m256i sum =
            fold_group<true>(p.lo01, x_lo, p.hi01, x_hi, p.lo23, x_lo, p.hi23, x_hi);
        const __m256 d = _mm256_mul_ps(p.d, _mm256_broadcast_ss(&x.d));
        acc.v = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sum), acc.v);
        acc.v = _mm256_fmadd_ps(p.m, _mm256_broadcast_ss(&x.s), acc.v);
    }
    static void finish(const Acc& acc, float* out, size_t row_stride) {
        alignas(32) float v[8];
        _mm256_store_ps(v, acc.v);
        for (int r = 0; r < kGroupRows; ++r) {
            const int l = kGroupLane[r];
            out[r * row_stride] = v[l] + v[l + 1];
        }
    }
};

// ---- Q5_0x4 against Q8_0 (widened scale) ----

// 0xFF bytes where the 5th bit is set, for elements [16h, 16h + 16) of two rows (qh: their 4 + 4
// bytes), row a in the low 128 bits.
inline __m256i q5_high_bits(const uint8_t* qh, int h) {
    uint64_t bits;
    std::memcpy(&bits, qh, sizeof(bits));
    const char a0 = static_cast<char>(2 * h), a1 = static_cast<char>(2 * h + 1);
    const char b0 = static_cast<char>(4 + 2 * h), b1 = static_cast<char>(5 + 2 * h);
    const __m256i spread =
        _mm256_setr_epi8(a0, a0, a0, a0, a0, a0, a0, a0, a1, a1, a1, a1, a1, a1, a1, a1, b0, b0, b0,
                         b0, b0, b0, b0, b0, b1, b1, b1, b1, b1, b1, b1, b1);
    const __m256i bytes =
        _mm256_shuffle_epi8(_mm256_set1_epi64x(static_cast<int64_t>(bits)), spread);
    const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201));
    return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
}

// Signed weights in the registers of rows 0|1 and 2|3 (Q5_0 decoded, Q8_0 as stored) against
// Q8_0 activations, by ggml's sign trick: |w| (unsigned) times x carrying w's sign. kSmallW:
// |w| <= 16 (sum_halves).
template <bool kSmallW>
struct SignedGroupDot {
    using XBlock = BlockQ8_0Wide;
    struct Prep {
        __m256i abs[4];  // |w| of lo01, hi01, lo23, hi23
        __m256i w[4];    // w
        __m256 d;        // folded layout
    };
    struct Acc {
        __m256 v;
    };
    static void set_abs(Prep& p) {
        for (int i = 0; i < 4; ++i) p.abs[i] = _mm256_sign_epi8(p.w[i], p.w[i]);
    }
    static __m256 scales(const uint16_t (&d)[kGroupRows]) {
        return group_scales(_mm256_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(d))));
    }
    static void accumulate(const Prep& p, const XBlock& x, Acc& acc) {
        const __m256i x_lo = _mm256_broadcastsi128_si256(load128(x.qs));
        const __m256i x_hi = _mm256_broadcastsi128_si256(load128(x.qs + 16));
        const __m256i sum = fold_group<kSmallW>(
            p.abs[0], _mm256_sign_epi8(x_lo, p.w[0]), p.abs[1], _mm256_sign_epi8(x_hi, p.w[1]),
            p.abs[2], _mm256_sign_epi8(x_lo, p.w[2]), p.abs[3], _mm256_sign_epi8(x_hi, p.w[3]));
        acc.v = _mm256_fmadd_ps(_mm256_mul_ps(p.d, _mm256_broadcast_ss(&x.d)),
                                _mm256_cvtepi32_ps(sum), acc.v);
    }
    static void finish(const Acc& acc, float* out, size_t row_stride) {
        alignas(32) float v[8];
        _mm256_store_ps(v, acc.v);
        for (int r = 0; r < kGroupRows; ++r) {
            const int l = kGroupLane[r];
            out[r * row_stride] = v[l] + v[l + 1];
        }
    }
};

struct Q5_0x4Simd : SignedGroupDot<true> {
    using WBlock = BlockQ5_0x4;
    static Prep prep(const WBlock& b) {
        Prep p;
        __m256i nib[4];
        unpack_row_pair(b.qs[0], nib[0], nib[1]);
        unpack_row_pair(b.qs[2], nib[2], nib[3]);
        const __m256i minus16 = _mm256_set1_epi8(-16);
        for (int i = 0; i < 4; ++i) {
            // w = nibble - 16 where the 5th bit is clear
            const __m256i high = q5_high_bits(b.qh[i < 2 ? 0 : 2], i % 2);
            p.w[i] = _mm256_or_si256(nib[i], _mm256_andnot_si256(high, minus16));
        }
        set_abs(p);
        p.d = scales(b.d);
        return p;
    }
};

// ---- Q8_0x4 against Q8_0 (widened scale) ----

struct Q8_0x4Simd : SignedGroupDot<false> {
    using WBlock = BlockQ8_0x4;
    static Prep prep(const WBlock& b) {
        Prep p;
        for (int i = 0; i < 4; ++i) p.w[i] = load256(b.qs + i * kQK);  // BlockQ8_0x4's chunk order
        set_abs(p);
        p.d = scales(b.d);
        return p;
    }
};

// ---- the group loop ----

template <class K, int NX>
void group_tile(const typename K::WBlock* w, const std::byte* x, size_t x_stride, int64_t n_blocks,
                float* out) {
    typename K::Acc acc[NX];
    accumulate_tile<K, NX>(w, x, x_stride, n_blocks, acc);
    for (int t = 0; t < NX; ++t) K::finish(acc[t], out + t, kMaxDotRows);
}

// Tiles of up to 4 tokens, so a block's prep and the tile's accumulators (mostly) stay in
// AVX2's 16 registers.
template <class K>
void group_dot(const void* w_group, const void* x, size_t x_stride, int n_x, int64_t n,
               float* out) {
    const auto* w = static_cast<const typename K::WBlock*>(w_group);
    const auto* xb = static_cast<const std::byte*>(x);
    const int64_t nb = n / kQK;
    for_tiles_of_four(n_x, [&](auto nx, int t0) {
        group_tile<K, decltype(nx)::value>(w, xb + size_t(t0) * x_stride, x_stride, nb, out + t0);
    });
}

inline void set_x86_group_kernels(GroupDotTable& table) {
    table[static_cast<size_t>(GgmlType::Q4_1)] = &group_dot<Q4_1x4Simd>;
    table[static_cast<size_t>(GgmlType::Q5_0)] = &group_dot<Q5_0x4Simd>;
    table[static_cast<size_t>(GgmlType::Q8_0)] = &group_dot<Q8_0x4Simd>;
}

}  // namespace x86
}  // namespace
}  // namespace fluoro::cpu::detail
