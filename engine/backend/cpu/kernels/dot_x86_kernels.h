// Internal to the CPU kernels: hand-written x86 row dot kernels for the hot weight types, in
// ggml's AVX2 formulations (quants.c, arch/x86). Included by dot_avx2.cpp (AVX2 + FMA + F16C) and
// dot_avx512.cpp (adds AVX-512 VL + VNNI, FLUORO_DOT_VNNI = 1) inside their target regions, after
// <immintrin.h> and dot_kernels.h (whose IQ grid decoders the IQ kernels reuse); everything has
// internal linkage, like dot_kernels.h.
//
// A kernel K describes one weight type:
//   K::WBlock, K::XBlock   weight block and partner activation block
//   K::Prep                what is decoded from a weight block once for the whole token tile
//   K::Acc                 a row's accumulators (8 float lanes, plus a scalar or 4 more lanes)
//   prep(w)                decodes a weight block
//   accumulate(p, x, acc)  adds one block's product: integer sums (exact), then one FMA per block
//   finish(acc)            the row's result
// Each activation row runs the same operations whatever the tile size, so a tile of rows gives
// the same bits as single-row calls (prefill and decode agree). Against the generic kernels only
// the float order differs: 8 lanes of FMAs instead of one running sum (ggml's SIMD order).
//
// Integer ranges: _mm256_maddubs_epi16 saturates pairs at int16. Weights here are unsigned
// (Q4_1/Q5_1: <= 31, k-quants: <= 63) or sign-folded |w| <= 128 against activations in
// [-127, 127] (the Q8 quantizers never produce -128 from finite input), so no pair reaches it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backend/cpu/kernels/dot_table.h"
#include "backend/cpu/kernels/vec_dot.h"
#include "tensor/blocks.h"
#include "tensor/ggml_type.h"

#ifndef FLUORO_DOT_VNNI
#define FLUORO_DOT_VNNI 0
#endif

namespace fluoro::cpu::detail {
namespace {
namespace x86 {

inline float fp16(uint16_t h) {
    return _cvtsh_ss(h);
}

inline float hsum(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

inline float hsum(__m128 v) {
    __m128 r = _mm_add_ps(v, _mm_movehl_ps(v, v));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

inline __m256i load256(const void* p) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
inline __m128i load128(const void* p) {
    return _mm_loadu_si128(static_cast<const __m128i*>(p));
}

// Σ of each 4 consecutive products a[i]·b[i] in int32 lanes: a unsigned bytes, b signed.
inline __m256i dot_u8_i8(__m256i a, __m256i b) {
#if FLUORO_DOT_VNNI
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), a, b);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), _mm256_set1_epi16(1));
#endif
}

// Σ w[i]·y[i] in int32 lanes for signed w and y: |w| times y with w's sign moved onto y.
inline __m256i dot_i8_i8(__m256i abs_w, __m256i w, __m256i y) {
    return dot_u8_i8(abs_w, _mm256_sign_epi8(y, w));
}

// The 32 nibbles of a legacy block: qs[j] & 15 -> byte j, qs[j] >> 4 -> byte j + 16.
inline __m256i unpack_nibbles_32(const uint8_t* qs) {
    const __m128i v = load128(qs);
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(v, 4), v);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// 32 bits (little-endian) -> 32 bytes, 0xFF where bit j is set.
inline __m256i bits_to_bytes_32(const uint8_t* p) {
    uint32_t bits;
    std::memcpy(&bits, p, sizeof(bits));
    const __m256i shuffle = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                              0x0101010101010101, 0x0000000000000000);
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), shuffle);
    const __m256i with_others = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7FBFDFEFF7FBFDFE));
    return _mm256_cmpeq_epi8(with_others, _mm256_set1_epi64x(-1));
}

// ---- legacy 32-element blocks ----

struct AccF {
    __m256 v;
};

// Signed weights (Q4_0, Q5_0, Q8_0, IQ4_NL) against Q8_0.
struct SignedPrep {
    __m256i abs_w;
    __m256i w;
    float d;
};

inline SignedPrep signed_prep(__m256i w, uint16_t d) {
    return {_mm256_sign_epi8(w, w), w, fp16(d)};
}

struct SignedLegacy {
    using XBlock = BlockQ8_0;
    using Prep = SignedPrep;
    using Acc = AccF;
    static void accumulate(const Prep& p, const XBlock& x, Acc& acc) {
        const __m256i sum = dot_i8_i8(p.abs_w, p.w, load256(x.qs));
        // acc = _mm256_fmadd_ps(d_x * d_y, q, acc)
        acc.v = _mm256_fmadd_ps(_mm256_set1_ps(p.d * fp16(x.d)), _mm256_cvtepi32_ps(sum), acc.v);
    }
    static float finish(const Acc& acc) { return hsum(acc.v); }
};

struct Q4_0Simd : SignedLegacy {
    using WBlock = BlockQ4_0;
    static Prep prep(const WBlock& b) {
        return signed_prep(_mm256_sub_epi8(unpack_nibbles_32(b.qs), _mm256_set1_epi8(8)), b.d);
    }
};

struct Q5_0Simd : SignedLegacy {
    using WBlock = BlockQ5_0;
    static Prep prep(const WBlock& b) {
        // nibble | 0xF0 (= nibble - 16 as int8) where the 5th bit is clear, nibble where it is set
        const __m256i high = _mm256_andnot_si256(bits_to_bytes_32(b.qh), _mm256_set1_epi8(-16));
        return signed_prep(_mm256_or_si256(unpack_nibbles_32(b.qs), high), b.d);
    }
};

struct Q8_0Simd : SignedLegacy {
    using WBlock = BlockQ8_0;
    static Prep prep(const WBlock& b) { return signed_prep(load256(b.qs), b.d); }
};

struct IQ4_NLSimd : SignedLegacy {
    using WBlock = BlockIQ4_NL;
    static Prep prep(const WBlock& b) {
        const __m256i table =
            _mm256_broadcastsi128_si256(load128(static_cast<const void*>(kValuesIQ4NL)));
        return signed_prep(_mm256_shuffle_epi8(table, unpack_nibbles_32(b.qs)), b.d);
    }
};

// The doubled E2M1 values through the same byte shuffle; the scale is the E8M0 power of two.
struct MXFP4Simd : SignedLegacy {
    using WBlock = BlockMXFP4;
    static Prep prep(const WBlock& b) {
        const __m256i table =
            _mm256_broadcastsi128_si256(load128(static_cast<const void*>(kValuesMXFP4)));
        const __m256i w = _mm256_shuffle_epi8(table, unpack_nibbles_32(b.qs));
        return {_mm256_sign_epi8(w, w), w, e8m0_to_fp32_half(b.e)};
    }
};

// Unsigned weights with a minimum (Q4_1, Q5_1) against Q8_1. Both blocks start with two fp16
// values (d, m and d, s), each pair converted by one vcvtph2ps; one multiply gives both d·d_x (the
// block's scale) and m·s (the minimum's term, accumulated in lane 1 of a vector). Per lane these
// are ggml's operations, `acc = fma(d0*d1, q, acc); summs += m*s`, so the bits are those of a
// scalar summs.
struct UnsignedPrep {
    __m256i u;
    __m128 dm;  // d, m, 0, 0
};

struct AccFS {
    __m256 v;
    __m128 summs;  // lane 1: Σ m·s
};

// Two consecutive fp16 values -> floats in lanes 0 and 1.
inline __m128 fp16_pair(const uint16_t* p) {
    int32_t bits;
    std::memcpy(&bits, p, sizeof(bits));
    return _mm_cvtph_ps(_mm_cvtsi32_si128(bits));
}

struct UnsignedLegacy {
    using XBlock = BlockQ8_1;
    using Prep = UnsignedPrep;
    using Acc = AccFS;
    static void accumulate(const Prep& p, const XBlock& x, Acc& acc) {
        const __m256i sum = dot_u8_i8(p.u, load256(x.qs));
        const __m128 prod = _mm_mul_ps(p.dm, fp16_pair(&x.d));  // d·d_x, m·s
        acc.v = _mm256_fmadd_ps(_mm256_broadcastss_ps(prod), _mm256_cvtepi32_ps(sum), acc.v);
        acc.summs = _mm_add_ps(acc.summs, prod);
    }
    static float finish(const Acc& acc) {
        return hsum(acc.v) + _mm_cvtss_f32(_mm_movehdup_ps(acc.summs));
    }
};

struct Q4_1Simd : UnsignedLegacy {
    using WBlock = BlockQ4_1;
    static Prep prep(const WBlock& b) { return {unpack_nibbles_32(b.qs), fp16_pair(&b.d)}; }
};

struct Q5_1Simd : UnsignedLegacy {
    using WBlock = BlockQ5_1;
    static Prep prep(const WBlock& b) {
        const __m256i high = _mm256_and_si256(bits_to_bytes_32(b.qh), _mm256_set1_epi8(0x10));
        return {_mm256_or_si256(unpack_nibbles_32(b.qs), high), fp16_pair(&b.d)};
    }
};

// ---- k-quants against Q8_K ----

struct AccK {
    __m256 v;
    __m128 m;  // Q4_K / Q5_K: the -dmin·Σ min·bsum lanes
};

// int16 lane pattern: broadcast int16 lane i of a 128-bit half (ggml's get_scale_shuffle_k4).
inline __m256i k4_scale(__m256i scales, int i) {
    return _mm256_shuffle_epi8(scales,
                               _mm256_set1_epi16(static_cast<int16_t>((2 * i + 1) << 8 | 2 * i)));
}

// Q4_K and Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins.
struct ScaleMinPrep {
    __m256i scales;  // int16 scales 0..7, in both 128-bit halves
    __m128i mins;    // int16 mins 0..7
    float d;
    float dmin;
};

inline ScaleMinPrep scale_min_prep(const uint8_t* packed, uint16_t d, uint16_t dmin) {
    constexpr uint32_t kmask1 = 0x3F3F3F3F, kmask2 = 0x0F0F0F0F, kmask3 = 0x03030303;
    uint32_t utmp[4];
    std::memcpy(utmp, packed, 12);
    utmp[3] = ((utmp[2] >> 4) & kmask2) | (((utmp[1] >> 6) & kmask3) << 4);
    const uint32_t uaux = utmp[1] & kmask1;
    utmp[1] = (utmp[2] & kmask2) | (((utmp[0] >> 6) & kmask3) << 4);
    utmp[2] = uaux;
    utmp[0] &= kmask1;
    const __m256i mins_and_scales =
        _mm256_cvtepu8_epi16(_mm_set_epi32(static_cast<int>(utmp[3]), static_cast<int>(utmp[2]),
                                           static_cast<int>(utmp[1]), static_cast<int>(utmp[0])));
    const __m128i sc = _mm256_castsi256_si128(mins_and_scales);
    return {_mm256_set_m128i(sc, sc), _mm256_extracti128_si256(mins_and_scales, 1), fp16(d),
            fp16(dmin)};
}

// The min term and the final FMA shared by Q4_K and Q5_K.
inline void finish_block_k4(const ScaleMinPrep& p, const BlockQ8_K& x, __m256i sumi, AccK& acc) {
    const __m256i bsums = load256(x.bsums);
    const __m128i sums32 =
        _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
    const __m128i prod = _mm_madd_epi16(p.mins, sums32);
    // dmin = -y[i].d * FP16_TO_FP32(x[i].dmin); acc_m = _mm_fmadd_ps(dmin, prod, acc_m)
    acc.m = _mm_fmadd_ps(_mm_set1_ps(-x.d * p.dmin), _mm_cvtepi32_ps(prod), acc.m);
    // d = y[i].d * FP16_TO_FP32(x[i].d); acc = _mm256_fmadd_ps(d, sumi, acc)
    acc.v = _mm256_fmadd_ps(_mm256_set1_ps(x.d * p.d), _mm256_cvtepi32_ps(sumi), acc.v);
}

// Σ over one 64-element chunk: lo (elements 0..31, scale 2j) and hi (32..63, scale 2j+1).
inline __m256i k4_chunk(const ScaleMinPrep& p, int j, __m256i lo, __m256i hi, const int8_t* y) {
    const __m256i p_lo =
        _mm256_madd_epi16(_mm256_maddubs_epi16(lo, load256(y)), k4_scale(p.scales, 2 * j));
    const __m256i p_hi =
        _mm256_madd_epi16(_mm256_maddubs_epi16(hi, load256(y + 32)), k4_scale(p.scales, 2 * j + 1));
    return _mm256_add_epi32(p_lo, p_hi);
}

// IQ4_XS: IQ4_NL's codebook through a byte shuffle, 8 groups of 32 with 6-bit scales ls - 32.
// Each group's int32 lane sums times its scale (exact: |Σ| <= 32·127·127·32 < 2^31) add into one
// integer vector per super-block, then one FMA with d·d_x, as ggml's AVX2 kernel does.
struct IQ4_XSSimd {
    using WBlock = BlockIQ4_XS;
    using XBlock = BlockQ8_K;
    using Acc = AccF;
    struct Prep {
        const uint8_t* qs;
        int32_t ls[8];
        float d;
    };
    static Prep prep(const WBlock& b) {
        Prep p{b.qs, {}, fp16(b.d)};
        for (int ib = 0; ib < 8; ++ib)
            p.ls[ib] = (((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) |
                        (((b.scales_h >> (2 * ib)) & 3) << 4)) -
                       32;
        return p;
    }
    static void accumulate(const Prep& p, const XBlock& x, Acc& acc) {
        const __m256i table =
            _mm256_broadcastsi128_si256(load128(static_cast<const void*>(kValuesIQ4NL)));
        __m256i sumi = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ++ib) {
            const __m256i w = _mm256_shuffle_epi8(table, unpack_nibbles_32(p.qs + 16 * ib));
            const __m256i dot = dot_i8_i8(_mm256_sign_epi8(w, w), w, load256(x.qs + 32 * ib));
            sumi = _mm256_add_epi32(sumi, _mm256_mullo_epi32(dot, _mm256_set1_epi32(p.ls[ib])));
        }
        // accum = _mm256_fmadd_ps(_mm256_set1_ps(d4d8), _mm256_cvtepi32_ps(sumi), accum)
        acc.v = _mm256_fmadd_ps(_mm256_set1_ps(p.d * x.d), _mm256_cvtepi32_ps(sumi), acc.v);
    }
    static float finish(const Acc& acc) { return hsum(acc.v); }
};

// The IQ2/IQ3 grid types: dot_kernels.h's decode (G::decode: signed int8 values, an odd integer
// scale per sub-block of 32 or 16) once per block for the tile, then the products in vector
// registers: each 32-byte chunk's int32 lane sums (lanes 0-3 and 4-7 are the two 16-element
// sub-blocks) times their scales, summed per super-block (|Σ| < 2^24, exact), one FMA per block
// and G::finish's constant factor at the end. ggml's generic order differs only in float rounding.
template <class G>
struct IQGridSimd {
    using WBlock = typename G::WBlock;
    using XBlock = BlockQ8_K;
    using Acc = AccF;
    using Prep = typename G::Decoded;
    static Prep prep(const WBlock& b) {
        Prep p;
        G::decode(b, p);
        return p;
    }
    static void accumulate(const Prep& p, const XBlock& x, Acc& acc) {
        __m256i sumi = _mm256_setzero_si256();
        for (int c = 0; c < 8; ++c) {
            const __m256i w = load256(p.q + 32 * c);
            const __m256i dot = dot_i8_i8(_mm256_sign_epi8(w, w), w, load256(x.qs + 32 * c));
            __m256i ls;
            if constexpr (G::kSub == 8) {
                ls = _mm256_set1_epi32(p.ls[c]);
            } else {
                ls =
                    _mm256_setr_m128i(_mm_set1_epi32(p.ls[2 * c]), _mm_set1_epi32(p.ls[2 * c + 1]));
            }
            sumi = _mm256_add_epi32(sumi, _mm256_mullo_epi32(dot, ls));
        }
        acc.v = _mm256_fmadd_ps(_mm256_set1_ps(p.d * x.d), _mm256_cvtepi32_ps(sumi), acc.v);
    }
    static float finish(const Acc& acc) { return G::finish(hsum(acc.v)); }
};

// IQ1_S / IQ1_M: dot_kernels.h's decode (values -1, 0, 1; an odd scale and a ±1 shift per group
// of 8), then per 32-byte chunk the int32 lane sums (two lanes per group) of q·x and of x alone,
// times the groups' ls and ls·shift; one FMA per block of d·d_x·(sumi + 1/8·sumi1) per lane.
template <class G>
struct IQ1Simd {
    using WBlock = typename G::WBlock;
    using XBlock = BlockQ8_K;
    using Acc = AccF;
    using Prep = typename G::Decoded;
    static Prep prep(const WBlock& b) {
        Prep p;
        G::decode(b, p);
        return p;
    }
    static void accumulate(const Prep& p, const XBlock& x, Acc& acc) {
        const __m256i pairs = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
        const __m256i ones = _mm256_set1_epi8(1);
        __m256i sumi = _mm256_setzero_si256(), sumi1 = _mm256_setzero_si256();
        for (int c = 0; c < 8; ++c) {
            const __m256i w = load256(p.q + 32 * c);
            const __m256i y = load256(x.qs + 32 * c);
            const __m256i ls =
                _mm256_permutevar8x32_epi32(_mm256_castsi128_si256(load128(p.ls + 4 * c)), pairs);
            const __m256i shift = _mm256_permutevar8x32_epi32(
                _mm256_castsi128_si256(load128(p.shift + 4 * c)), pairs);
            const __m256i dot = dot_i8_i8(_mm256_sign_epi8(w, w), w, y);
            sumi = _mm256_add_epi32(sumi, _mm256_mullo_epi32(dot, ls));
            const __m256i xsum = dot_u8_i8(ones, y);
            sumi1 = _mm256_add_epi32(sumi1, _mm256_mullo_epi32(xsum, _mm256_sign_epi32(ls, shift)));
        }
        const __m256 total = _mm256_fmadd_ps(_mm256_set1_ps(kIQ1Delta), _mm256_cvtepi32_ps(sumi1),
                                             _mm256_cvtepi32_ps(sumi));
        acc.v = _mm256_fmadd_ps(_mm256_set1_ps(p.d * x.d), total, acc.v);
    }
    static float finish(const Acc& acc) { return hsum(acc.v); }
};

struct Q4_KSimd {
    using WBlock = BlockQ4_K;
    using XBlock = BlockQ8_K;
    using Acc = AccK;
    struct Prep : ScaleMinPrep {
        const uint8_t* qs;
    };
    static Prep prep(const WBlock& b) { return {scale_min_prep(b.scales, b.d, b.dmin), b.qs}; }
    static void accumulate(const Prep& p, const XBlock& x, Acc& acc) {
        const __m256i m4 = _mm256_set1_epi8(0x0F);
        __m256i sumi = _mm256_setzero_si256();
        for (int j = 0; j < 4; ++j) {
            const __m256i q = load256(p.qs + 32 * j);
            const __m256i lo = _mm256_and_si256(q, m4);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            sumi = _mm256_add_epi32(sumi, k4_chunk(p, j, lo, hi, x.qs + 64 * j));
        }
        finish_block_k4(p, x, sumi, acc);
    }
    static float finish(const Acc& acc) { return hsum(acc.v) + hsum(acc.m); }
};

struct Q5_KSimd : Q4_KSimd {
    using WBlock = BlockQ5_K;
    struct Prep : ScaleMinPrep {
        const uint8_t* qs;
        const uint8_t* qh;
    };
    static Prep prep(const WBlock& b) {
        return {scale_min_prep(b.scales, b.d, b.dmin), b.qs, b.qh};
    }
    static void accumulate(const Prep& p, const XBlock& x, Acc& acc) {
        const __m256i m4 = _mm256_set1_epi8(0x0F);
        const __m256i bit4 = _mm256_set1_epi8(0x10);
        const __m256i qh = load256(p.qh);
        __m256i sumi = _mm256_setzero_si256();
        for (int j = 0; j < 4; ++j) {
            // bit 2j of qh[l] is the 5th bit of the low-nibble element l, bit 2j+1 the high one's
            const __m256i q = load256(p.qs + 32 * j);
            const __m256i h_lo =
                _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * j), 4), bit4);
            const __m256i h_hi =
                _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * j + 1), 4), bit4);
            const __m256i lo = _mm256_or_si256(_mm256_and_si256(q, m4), h_lo);
            const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), h_hi);
            sumi = _mm256_add_epi32(sumi, k4_chunk(p, j, lo, hi, x.qs + 64 * j));
        }
        finish_block_k4(p, x, sumi, acc);
    }
};

// Q6_K: 16 sub-blocks of 16, signed 8-bit scales, q in 0..63 with offset 32. The offset is taken
// out once per block as 32·Σ scale[j]·bsums[j] instead of per element.
struct Q6_KSimd {
    using WBlock = BlockQ6_K;
    using XBlock = BlockQ8_K;
    using Acc = AccK;
    struct Prep {
        const WBlock* w;
        __m128i scales;  // 16 int8
        float d;
    };
    static Prep prep(const WBlock& b) { return {&b, load128(b.scales), fp16(b.d)}; }
    // int8 lanes: scale 2c in bytes 0..7, 2c+1 in bytes 8..15 (ggml's get_scale_shuffle).
    static __m256i chunk_scales(__m128i scales, int c) {
        const auto lo = static_cast<int8_t>(2 * c);
        const auto hi = static_cast<int8_t>(2 * c + 1);
        const __m128i shuffle =
            _mm_set_epi8(hi, hi, hi, hi, hi, hi, hi, hi, lo, lo, lo, lo, lo, lo, lo, lo);
        return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, shuffle));
    }
    static void accumulate(const Prep& p, const XBlock& x, Acc& acc) {
        const __m256i m4 = _mm256_set1_epi8(0x0F);
        const __m256i m2 = _mm256_set1_epi8(0x03);
        const __m256i m2_hi = _mm256_set1_epi8(0x30);
        __m256i sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; ++h) {
            const __m256i bits1 = load256(p.w->ql + 64 * h);       // elements l, l+64
            const __m256i bits2 = load256(p.w->ql + 64 * h + 32);  // elements l+32, l+96
            const __m256i bh = load256(p.w->qh + 32 * h);
            __m256i q[4];
            q[0] = _mm256_or_si256(_mm256_and_si256(bits1, m4),
                                   _mm256_slli_epi16(_mm256_and_si256(bh, m2), 4));
            q[1] = _mm256_or_si256(
                _mm256_and_si256(bits2, m4),
                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(bh, 2), m2), 4));
            q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits1, 4), m4),
                                   _mm256_and_si256(bh, m2_hi));
            q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits2, 4), m4),
                                   _mm256_and_si256(_mm256_srli_epi16(bh, 2), m2_hi));
            for (int k = 0; k < 4; ++k) {
                const __m256i prod = _mm256_maddubs_epi16(q[k], load256(x.qs + 128 * h + 32 * k));
                sumi = _mm256_add_epi32(sumi,
                                        _mm256_madd_epi16(prod, chunk_scales(p.scales, 4 * h + k)));
            }
        }
        const __m256i offset = _mm256_madd_epi16(load256(x.bsums), _mm256_cvtepi8_epi16(p.scales));
        sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(offset, 5));
        // d = y[i].d * FP16_TO_FP32(x[i].d); acc = _mm256_fmadd_ps(d, sumi, acc)
        acc.v = _mm256_fmadd_ps(_mm256_set1_ps(x.d * p.d), _mm256_cvtepi32_ps(sumi), acc.v);
    }
    static float finish(const Acc& acc) { return hsum(acc.v); }
};

// ---- float types: weights and activations in the same format (F32, F16, BF16) ----
// Converted to fp32 in registers (F16C; BF16 is the top half of an fp32) and multiplied with FMAs
// into fp32 accumulators, as ggml's SIMD ggml_vec_dot_f16/bf16/f32 do (the generic kernels
// accumulate in double, like ggml's scalar code).

struct F32Simd {
    using T = float;
    static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
    static float load1(const float* p) { return *p; }
};

struct F16Simd {
    using T = uint16_t;
    static __m256 load(const uint16_t* p) { return _mm256_cvtph_ps(load128(p)); }
    static float load1(const uint16_t* p) { return fp16(*p); }
};

struct BF16Simd {
    using T = uint16_t;
    static __m256 load(const uint16_t* p) {
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load128(p)), 16));
    }
    static float load1(const uint16_t* p) {
        const uint32_t bits = uint32_t{*p} << 16;
        float f;
        std::memcpy(&f, &bits, sizeof(f));
        return f;
    }
};

// NX tokens (NX <= 4: two accumulators each stay in registers on AVX2's 16) against one row; the
// weights are converted once for all of them. A token's operations do not depend on NX.
template <class F, int NX>
void float_dot_tile(const typename F::T* w, const std::byte* x, size_t x_stride, int64_t n,
                    float* out) {
    using T = typename F::T;
    const T* xs[NX];
    __m256 acc[NX][2];
    for (int t = 0; t < NX; ++t) {
        xs[t] = reinterpret_cast<const T*>(x + size_t(t) * x_stride);
        acc[t][0] = acc[t][1] = _mm256_setzero_ps();
    }
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 w0 = F::load(w + i), w1 = F::load(w + i + 8);
        for (int t = 0; t < NX; ++t) {
            acc[t][0] = _mm256_fmadd_ps(w0, F::load(xs[t] + i), acc[t][0]);
            acc[t][1] = _mm256_fmadd_ps(w1, F::load(xs[t] + i + 8), acc[t][1]);
        }
    }
    if (i + 8 <= n) {
        const __m256 w0 = F::load(w + i);
        for (int t = 0; t < NX; ++t) acc[t][0] = _mm256_fmadd_ps(w0, F::load(xs[t] + i), acc[t][0]);
        i += 8;
    }
    for (int t = 0; t < NX; ++t) {
        float sum = hsum(_mm256_add_ps(acc[t][0], acc[t][1]));
        for (int64_t j = i; j < n; ++j) sum += F::load1(w + j) * F::load1(xs[t] + j);
        out[t] = sum;
    }
}

// Calls f(std::integral_constant<int, n>{}) for a run-time count 1 <= n <= N.
template <int N, class F>
inline void with_count(int n, F&& f) {
    if constexpr (N > 1) {
        if (n < N) return with_count<N - 1>(n, f);
    }
    f(std::integral_constant<int, N>{});
}

// Calls tile(std::integral_constant<int, NX>{}, t0) for tiles of up to kMax of n_x tokens: t0 the
// tile's first token, NX its size (a compile-time constant for the kernels' register arrays).
// kMax is what the kernel's prep and accumulators leave room for: 4 in AVX2's 16 registers,
// up to 8 (kMaxDotRows) in AVX-512's 32.
template <int kMax, class Tile>
inline void for_tiles(int n_x, Tile&& tile) {
    static_assert(kMax >= 1 && kMax <= kMaxDotRows);
    for (int t0 = 0; t0 < n_x; t0 += kMax)
        with_count<kMax>(n_x - t0 < kMax ? n_x - t0 : kMax, [&](auto nx) { tile(nx, t0); });
}

template <class F>
void row_dot_float_simd(const void* w_row, const void* x, size_t x_stride, int n_x, int64_t n,
                        float* out) {
    const auto* w = static_cast<const typename F::T*>(w_row);
    const auto* xb = static_cast<const std::byte*>(x);
    for_tiles<4>(n_x, [&](auto nx, int t0) {
        float_dot_tile<F, decltype(nx)::value>(w, xb + size_t(t0) * x_stride, x_stride, n,
                                               out + t0);
    });
}

// ---- the row loop ----

// Weight bytes the row loop asks for ahead of the block it decodes. Decode streams each weight
// once from memory; the hardware prefetcher alone left a large Q8_0 matrix (SmolLM2's 30 MB LM
// head, 2 threads, Zen 3, fluoro_cpu_matmul_bench) at 15.4 GB/s of the ~20 memory reads; 6 KiB
// ahead it reached 19.9 (medians of four or five alternations; 4 KiB 17.5, 8 KiB 19.5).
// One prefetch per block, or per 64 bytes of a block larger than a cache line.
// Prefetches never fault, so running past the matrix's end is harmless.
inline constexpr size_t kPrefetchBytes = 6144;

template <class WBlock>
inline void prefetch_ahead(const WBlock* block) {
    const char* ahead = reinterpret_cast<const char*>(block) + kPrefetchBytes;
    for (size_t offset = 0; offset < sizeof(WBlock); offset += 64)
        _mm_prefetch(ahead + offset, _MM_HINT_T0);
}

// The accumulators of NX activation rows against one weight row (or row group, interleave.h):
// each weight block decoded once (K::prep), then added into every row's accumulator.
template <class K, int NX>
void accumulate_tile(const typename K::WBlock* w, const std::byte* x, size_t x_stride,
                     int64_t n_blocks, typename K::Acc (&acc)[NX]) {
    using XBlock = typename K::XBlock;
    const XBlock* xs[NX];
    for (int t = 0; t < NX; ++t) {
        xs[t] = reinterpret_cast<const XBlock*>(x + size_t(t) * x_stride);
        std::memset(static_cast<void*>(&acc[t]), 0, sizeof(acc[t]));
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
        prefetch_ahead(w + b);
        const typename K::Prep p = K::prep(w[b]);
        for (int t = 0; t < NX; ++t) K::accumulate(p, xs[t][b], acc[t]);
    }
}

template <class K, int NX>
void row_dot_fixed(const typename K::WBlock* w, const std::byte* x, size_t x_stride,
                   int64_t n_blocks, float* out) {
    typename K::Acc acc[NX];
    accumulate_tile<K, NX>(w, x, x_stride, n_blocks, acc);
    for (int t = 0; t < NX; ++t) out[t] = K::finish(acc[t]);
}

template <class K>
void row_dot(const void* w_row, const void* x, size_t x_stride, int n_x, int64_t n, float* out) {
    static_assert(kMaxDotRows == 8);
    const auto* w = static_cast<const typename K::WBlock*>(w_row);
    const auto* xb = static_cast<const std::byte*>(x);
    const int64_t nb = n / K::WBlock::kElems;
    switch (n_x) {
        case 1:
            return row_dot_fixed<K, 1>(w, xb, x_stride, nb, out);
        case 2:
            return row_dot_fixed<K, 2>(w, xb, x_stride, nb, out);
        case 3:
            return row_dot_fixed<K, 3>(w, xb, x_stride, nb, out);
        case 4:
            return row_dot_fixed<K, 4>(w, xb, x_stride, nb, out);
        case 5:
            return row_dot_fixed<K, 5>(w, xb, x_stride, nb, out);
        case 6:
            return row_dot_fixed<K, 6>(w, xb, x_stride, nb, out);
        case 7:
            return row_dot_fixed<K, 7>(w, xb, x_stride, nb, out);
        default:
            return row_dot_fixed<K, 8>(w, xb, x_stride, nb, out);
    }
}

// Two weight rows against NX activation rows: both rows' blocks are decoded per block, then
// each activation block (and its scale) is read once for both. A row's accumulation is exactly
// row_dot_fixed's. 2 x NX accumulators: for the legacy types only, on AVX-512's 32 registers.
template <class K, int NX>
void row_pair_dot_fixed(const typename K::WBlock* w0, const typename K::WBlock* w1,
                        const std::byte* x, size_t x_stride, int64_t n_blocks, float* out0,
                        float* out1) {
    using XBlock = typename K::XBlock;
    const XBlock* xs[NX];
    typename K::Acc acc0[NX], acc1[NX];
    for (int t = 0; t < NX; ++t) {
        xs[t] = reinterpret_cast<const XBlock*>(x + size_t(t) * x_stride);
        std::memset(static_cast<void*>(&acc0[t]), 0, sizeof(acc0[t]));
        std::memset(static_cast<void*>(&acc1[t]), 0, sizeof(acc1[t]));
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
        const typename K::Prep p0 = K::prep(w0[b]);
        const typename K::Prep p1 = K::prep(w1[b]);
        for (int t = 0; t < NX; ++t) {
            const XBlock& xb = xs[t][b];
            K::accumulate(p0, xb, acc0[t]);
            K::accumulate(p1, xb, acc1[t]);
        }
    }
    for (int t = 0; t < NX; ++t) {
        out0[t] = K::finish(acc0[t]);
        out1[t] = K::finish(acc1[t]);
    }
}

template <class K>
void row_pair_dot(const void* w, size_t w_stride, const void* x, size_t x_stride, int n_x,
                  int64_t n, float* out0, float* out1) {
    static_assert(kMaxDotRows == 8);
    const auto* w0 = static_cast<const typename K::WBlock*>(w);
    const auto* w1 =
        reinterpret_cast<const typename K::WBlock*>(static_cast<const std::byte*>(w) + w_stride);
    const auto* xb = static_cast<const std::byte*>(x);
    const int64_t nb = n / K::WBlock::kElems;
    switch (n_x) {
        case 1:
            return row_pair_dot_fixed<K, 1>(w0, w1, xb, x_stride, nb, out0, out1);
        case 2:
            return row_pair_dot_fixed<K, 2>(w0, w1, xb, x_stride, nb, out0, out1);
        case 3:
            return row_pair_dot_fixed<K, 3>(w0, w1, xb, x_stride, nb, out0, out1);
        case 4:
            return row_pair_dot_fixed<K, 4>(w0, w1, xb, x_stride, nb, out0, out1);
        case 5:
            return row_pair_dot_fixed<K, 5>(w0, w1, xb, x_stride, nb, out0, out1);
        case 6:
            return row_pair_dot_fixed<K, 6>(w0, w1, xb, x_stride, nb, out0, out1);
        case 7:
            return row_pair_dot_fixed<K, 7>(w0, w1, xb, x_stride, nb, out0, out1);
        default:
            return row_pair_dot_fixed<K, 8>(w0, w1, xb, x_stride, nb, out0, out1);
    }
}

inline void set_x86_pair_kernels(PairDotTable& table) {
    const auto set = [&table](GgmlType type, RowPairDotFn fn) {
        table[static_cast<size_t>(type)] = fn;
    };
    set(GgmlType::Q4_0, &row_pair_dot<Q4_0Simd>);
    set(GgmlType::Q4_1, &row_pair_dot<Q4_1Simd>);
    set(GgmlType::Q5_0, &row_pair_dot<Q5_0Simd>);
    set(GgmlType::Q5_1, &row_pair_dot<Q5_1Simd>);
    set(GgmlType::Q8_0, &row_pair_dot<Q8_0Simd>);
    set(GgmlType::IQ4_NL, &row_pair_dot<IQ4_NLSimd>);
    set(GgmlType::MXFP4, &row_pair_dot<MXFP4Simd>);
}

// Puts the kernels of this file over `table`.
inline void set_x86_kernels(DotTable& table) {
    const auto set = [&table](GgmlType type, RowDotFn fn) {
        table[static_cast<size_t>(type)] = fn;
    };
    set(GgmlType::Q4_0, &row_dot<Q4_0Simd>);
    set(GgmlType::Q4_1, &row_dot<Q4_1Simd>);
    set(GgmlType::Q5_0, &row_dot<Q5_0Simd>);
    set(GgmlType::Q5_1, &row_dot<Q5_1Simd>);
    set(GgmlType::Q8_0, &row_dot<Q8_0Simd>);
    set(GgmlType::IQ4_NL, &row_dot<IQ4_NLSimd>);
    set(GgmlType::MXFP4, &row_dot<MXFP4Simd>);
    set(GgmlType::Q4_K, &row_dot<Q4_KSimd>);
    set(GgmlType::Q5_K, &row_dot<Q5_KSimd>);
    set(GgmlType::Q6_K, &row_dot<Q6_KSimd>);
    set(GgmlType::IQ4_XS, &row_dot<IQ4_XSSimd>);
    set(GgmlType::IQ2_XXS, &row_dot<IQGridSimd<IQ2_XXSKernel>>);
    set(GgmlType::IQ2_XS, &row_dot<IQGridSimd<IQ2_XSKernel>>);
    set(GgmlType::IQ2_S, &row_dot<IQGridSimd<IQ2_SKernel>>);
    set(GgmlType::IQ3_XXS, &row_dot<IQGridSimd<IQ3_XXSKernel>>);
    set(GgmlType::IQ3_S, &row_dot<IQGridSimd<IQ3_SKernel>>);
    set(GgmlType::IQ1_S, &row_dot<IQ1Simd<IQ1_SKernel>>);
    set(GgmlType::IQ1_M, &row_dot<IQ1Simd<IQ1_MKernel>>);
    set(GgmlType::F32, &row_dot_float_simd<F32Simd>);
    set(GgmlType::F16, &row_dot_float_simd<F16Simd>);
    set(GgmlType::BF16, &row_dot_float_simd<BF16Simd>);
}

}  // namespace x86
}  // namespace
}  // namespace fluoro::cpu::detail
