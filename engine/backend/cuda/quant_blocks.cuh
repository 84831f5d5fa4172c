// How each GGUF weight type's blocks are decoded on the device, for the matrix products of
// cuda_matmul.cu: per-type traits (block geometry; part(): a lane's share of a block dequantized
// to f32 in registers for the GEMV, FMA allowed; elem(): one element exactly as the CPU reference
// computes it, with __fmul_rn/__fadd_rn/__fsub_rn, never contracted, for get_rows and the GEMM
// dequantizer) and dispatch_type(), which calls a functor with the traits of a run-time type.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "core/error.h"
#include "tensor/blocks.h"
#include "tensor/ggml_type.h"

namespace fluoro::cuda::quant {

// ---------------------------------------------------------------------------------------------
// Small device helpers.

__device__ __forceinline__ float half_at(const uint8_t* p) {  // p 2-byte aligned
    return __half2float(*reinterpret_cast<const __half*>(p));
}
__device__ __forceinline__ uint32_t u16_at(const uint8_t* p) {  // p 2-byte aligned
    return *reinterpret_cast<const uint16_t*>(p);
}
__device__ __forceinline__ uint32_t u32_at(const uint8_t* p) {  // p 4-byte aligned
    return *reinterpret_cast<const uint32_t*>(p);
}
__device__ __forceinline__ uint32_t u32_at_a2(const uint8_t* p) {  // p 2-byte aligned
    return u16_at(p) | (u16_at(p + 2) << 16);
}
// Byte k (0..3) of w, exactly, as a float in [0, 256): the float 2^23 + b is 0x4B0000bb.
__device__ __forceinline__ float byte_f(uint32_t w, int k) {
    return __int_as_float(static_cast<int>(__byte_perm(w, 0x4Bu, 0x4550u | k))) - 8388608.0f;
}
// A small non-negative integer (< 2^23) as a float, exactly, without I2F.
__device__ __forceinline__ float int_f(uint32_t v) {
    return __int_as_float(static_cast<int>(0x4B000000u | v)) - 8388608.0f;
}

// ---------------------------------------------------------------------------------------------
// Per-type traits. Each has:
//   kElems, kBytes: block geometry (ggml);  kAlign: alignment the GEMV loads need of a block;
//   kParts (divides 32), kE elements per part, in kRuns runs of kRunLen contiguous elements;
//   run_start(p, r): offset in the block of run r of part p;
//   part(b, p, w): w[kE] = the part's dequantized values, run after run (FMA allowed);
//   elem(b, j): element j of the block exactly as the CPU reference computes it.

// Element j's 4-bit value in the legacy nibble layout (low nibble of qs[j] for j < 16, high
// nibble of qs[j - 16] otherwise).
__device__ __forceinline__ int legacy_nibble(const uint8_t* qs, int j) {
    return j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4);
}

struct TQ4_0 {
    static constexpr int kElems = 32, kBytes = 18, kAlign = 2;
    static constexpr int kParts = 4, kE = 8, kRuns = 2, kRunLen = 4;
    __device__ static int run_start(int p, int r) { return 16 * r + 4 * p; }
    __device__ static void part(const uint8_t* b, int p, float (&w)[kE]) {
        const float d = half_at(b);
        const float bias = -8.0f * d;
        const uint32_t q = u32_at_a2(b + 2 + 4 * p);
        const uint32_t lo = q & 0x0F0F0F0Fu, hi = (q >> 4) & 0x0F0F0F0Fu;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            w[k] = fmaf(byte_f(lo, k), d, bias);
            w[4 + k] = fmaf(byte_f(hi, k), d, bias);
        }
    }
    __device__ static float elem(const uint8_t* b, int j) {
        return __fmul_rn(static_cast<float>(legacy_nibble(b + 2, j) - 8), half_at(b));
    }
};

struct TQ4_1 {
    static constexpr int kElems = 32, kBytes = 20, kAlign = 4;
    static constexpr int kParts = 4, kE = 8, kRuns = 2, kRunLen = 4;
    __device__ static int run_start(int p, int r) { return 16 * r + 4 * p; }
    __device__ static void part(const uint8_t* b, int p, float (&w)[kE]) {
        const float d = half_at(b);
        const float m = half_at(b + 2);
        const uint32_t q = u32_at(b + 4 + 4 * p);
        const uint32_t lo = q & 0x0F0F0F0Fu, hi = (q >> 4) & 0x0F0F0F0Fu;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            w[k] = fmaf(byte_f(lo, k), d, m);
            w[4 + k] = fmaf(byte_f(hi, k), d, m);
        }
    }
    __device__ static float elem(const uint8_t* b, int j) {
        return __fadd_rn(__fmul_rn(static_cast<float>(legacy_nibble(b + 4, j)), half_at(b)),
                         half_at(b + 2));
    }
};

// Q5_0/Q5_1: the 5th bit of element j is bit j of the little-endian 32-bit qh.
struct TQ5_0 {
    static constexpr int kElems = 32, kBytes = 22, kAlign = 2;
    static constexpr int kParts = 4, kE = 8, kRuns = 2, kRunLen = 4;
    __device__ static int run_start(int p, int r) { return 16 * r + 4 * p; }
    __device__ static void part(const uint8_t* b, int p, float (&w)[kE]) {
        const float d = half_at(b);
        const float bias = -16.0f * d;
        const uint32_t qh = u32_at_a2(b + 2);
        const uint32_t q = u32_at_a2(b + 6 + 4 * p);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const uint32_t q0 = ((q >> (8 * k)) & 0xF) | (((qh >> (4 * p + k)) & 1) << 4);
            const uint32_t q1 = ((q >> (8 * k + 4)) & 0xF) | (((qh >> (16 + 4 * p + k)) & 1) << 4);
            w[k] = fmaf(int_f(q0), d, bias);
            w[4 + k] = fmaf(int_f(q1), d, bias);
        }
    }
    __device__ static float elem(const uint8_t* b, int j) {
        const uint32_t qh = u32_at_a2(b + 2);
        const int q = legacy_nibble(b + 6, j) | static_cast<int>(((qh >> j) & 1) << 4);
        return __fmul_rn(static_cast<float>(q - 16), half_at(b));
    }
};

struct TQ5_1 {
    static constexpr int kElems = 32, kBytes = 24, kAlign = 4;
    static constexpr int kParts = 4, kE = 8, kRuns = 2, kRunLen = 4;
    __device__ static int run_start(int p, int r) { return 16 * r + 4 * p; }
    __device__ static void part(const uint8_t* b, int p, float (&w)[kE]) {
        const float d = half_at(b);
        const float m = half_at(b + 2);
        const uint32_t qh = u32_at(b + 4);
        const uint32_t q = u32_at(b + 8 + 4 * p);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const uint32_t q0 = ((q >> (8 * k)) & 0xF) | (((qh >> (4 * p + k)) & 1) << 4);
            const uint32_t q1 = ((q >> (8 * k + 4)) & 0xF) | (((qh >> (16 + 4 * p + k)) & 1) << 4);
            w[k] = fmaf(int_f(q0), d, m);
            w[4 + k] = fmaf(int_f(q1), d, m);
        }
    }
    __device__ static float elem(const uint8_t* b, int j) {
        const uint32_t qh = u32_at(b + 4);
        const int q = legacy_nibble(b + 8, j) | static_cast<int>(((qh >> j) & 1) << 4);
        return __fadd_rn(__fmul_rn(static_cast<float>(q), half_at(b)), half_at(b + 2));
    }
};

struct TQ8_0 {
    static constexpr int kElems = 32, kBytes = 34, kAlign = 2;
    static constexpr int kParts = 4, kE = 8, kRuns = 1, kRunLen = 8;
    __device__ static int run_start(int p, int) { return 8 * p; }
    __device__ static void part(const uint8_t* b, int p, float (&w)[kE]) {
        const float d = half_at(b);
        const float bias = -128.0f * d;  // q = u - 128 with u = q ^ 0x80 in [0, 256)
        const uint32_t q0 = u32_at_a2(b + 2 + 8 * p) ^ 0x80808080u;
        const uint32_t q1 = u32_at_a2(b + 6 + 8 * p) ^ 0x80808080u;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            w[k] = fmaf(byte_f(q0, k), d, bias);
            w[4 + k] = fmaf(byte_f(q1, k), d, bias);
        }
    }
    __device__ static float elem(const uint8_t* b, int j) {
        return __fmul_rn(static_cast<float>(static_cast<int8_t>(b[2 + j])), half_at(b));
    }
};

// Q4_K/Q5_K sub-block j's (0..7) 6-bit scale and min (ggml's get_scale_min_k4).
__device__ __forceinline__ void k4_scale_min(const uint8_t* s, int j, int& sc, int& mn) {
    if (j < 4) {
        sc = s[j] & 63;
        mn = s[j + 4] & 63;
    } else {
        sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}
// The same from the 12 scale bytes held in three registers (byte k of the 12 is byte k % 4 of
// s[k / 4]).
__device__ __forceinline__ uint32_t sbyte(const uint32_t (&s)[3], int k) {
    const uint32_t word = k < 4 ? s[0] : (k < 8 ? s[1] : s[2]);
    return (word >> (8 * (k & 3))) & 0xFF;
}
__device__ __forceinline__ void k4_scale_min_r(const uint32_t (&s)[3], int j, uint32_t& sc,
                                               uint32_t& mn) {
    if (j < 4) {
        sc = sbyte(s, j) & 63;
        mn = sbyte(s, j + 4) & 63;
    } else {
        sc = (sbyte(s, j + 4) & 0xF) | ((sbyte(s, j - 4) >> 6) << 4);
        mn = (sbyte(s, j + 4) >> 4) | ((sbyte(s, j) >> 6) << 4);
    }
}

// Q4_K (kQH = false) and Q5_K (kQH = true). Block: d, dmin (fp16), scales[12], [qh[32]], qs[128].
// Chunk g (0..3) of 64 elements reads qs[32g .. 32g+32): low nibbles are sub-block 2g (elements
// 64g + l), high nibbles sub-block 2g+1 (elements 64g + 32 + l); Q5_K adds 16 when bit `sub` of
// qh[l] is set. Part p (0..15): g = p / 4, l in [8 (p % 4), 8 (p % 4) + 8): runs 64g + l0 and
// 64g + 32 + l0 of 8 elements.
template <bool kQH>
struct TK4 {
    static constexpr int kElems = 256, kBytes = kQH ? 176 : 144, kAlign = 8;
    static constexpr int kQs = kQH ? 48 : 16;
    static constexpr int kParts = 16, kE = 16, kRuns = 2, kRunLen = 8;
    __device__ static int run_start(int p, int r) { return 64 * (p >> 2) + 32 * r + 8 * (p & 3); }
    __device__ static void part(const uint8_t* b, int p, float (&w)[kE]) {
        const float d = half_at(b);
        const float dmin = half_at(b + 2);
        const uint32_t s[3] = {u32_at(b + 4), u32_at(b + 8), u32_at(b + 12)};
        const int g = p >> 2;
        const int l0 = 8 * (p & 3);
        const uint2 q = *reinterpret_cast<const uint2*>(b + kQs + 32 * g + l0);
        uint2 h = make_uint2(0, 0);
        if constexpr (kQH) h = *reinterpret_cast<const uint2*>(b + 16 + l0);
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int sub = 2 * g + half;
            uint32_t sc, mn;
            k4_scale_min_r(s, sub, sc, mn);
            const float dl = d * int_f(sc);
            const float ml = -(dmin * int_f(mn));
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                const uint32_t qw = k < 4 ? q.x : q.y;
                uint32_t v = (qw >> (8 * (k & 3) + 4 * half)) & 0xF;
                if constexpr (kQH) {
                    const uint32_t hw = k < 4 ? h.x : h.y;
                    v |= ((hw >> (8 * (k & 3) + sub)) & 1) << 4;
                }
                w[8 * half + k] = fmaf(int_f(v), dl, ml);
            }
        }
    }
    __device__ static float elem(const uint8_t* b, int j) {
        const int g = j >> 6;
        const int half = (j >> 5) & 1;
        const int l = j & 31;
        const int sub = 2 * g + half;
        int sc, mn;
        k4_scale_min(b + 4, sub, sc, mn);
        const float dl = __fmul_rn(half_at(b), static_cast<float>(sc));
        const float ml = __fmul_rn(half_at(b + 2), static_cast<float>(mn));
        const uint8_t qb = b[kQs + 32 * g + l];
        int v = half == 0 ? (qb & 0xF) : (qb >> 4);
        if constexpr (kQH) {
            if ((b[16 + l] >> sub) & 1) v += 16;
        }
        return __fsub_rn(__fmul_rn(dl, static_cast<float>(v)), ml);
    }
};
using TQ4_K = TK4<false>;
using TQ5_K = TK4<true>;

// Q6_K: ql[128], qh[64], scales[16] (int8), d (fp16). Half h (0..1) uses ql[64h..], qh[32h..],
// scales[8h..]; for l < 32: element l   = ql[l] low nibble,    qh[l] bits 0-1, scale is
//                                  l+32 = ql[l+32] low nibble, bits 2-3, scale is + 2
//                                  l+64 = ql[l] high nibble,   bits 4-5, scale is + 4
//                                  l+96 = ql[l+32] high nibble, bits 6-7, scale is + 6
// (is = l / 16), value d * scale * (q - 32). With b the ql byte index within the half (0..63),
// the low nibble is element 128h + b and the high nibble element 128h + b + 64. Part p (0..31)
// takes ql bytes b = 2p, 2p+1 of both halves: runs 2p, 2p + 64, 128 + 2p, 192 + 2p of 2.
struct TQ6_K {
    static constexpr int kElems = 256, kBytes = 210, kAlign = 2;
    static constexpr int kParts = 32, kE = 8, kRuns = 4, kRunLen = 2;
    __device__ static int run_start(int p, int r) { return 64 * r + 2 * p; }
    __device__ static void part(const uint8_t* b, int p, float (&w)[kE]) {
        const float d = half_at(b + 208);
        const int hi_q = p >= 16 ? 1 : 0;  // byte in ql[l + 32]: qh bits 2-3 / 6-7, scale + 2
        const int is = ((p & 15) >> 3) + 2 * hi_q;
        const int shift = 2 * hi_q;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const uint32_t ql = u16_at(b + 64 * h + 2 * p);
            const uint32_t qh = u16_at(b + 128 + 32 * h + 2 * (p & 15));
            const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192 + 8 * h);
            const float s_lo = d * static_cast<float>(sc[is]);
            const float s_hi = d * static_cast<float>(sc[is + 4]);
#pragma unroll
            for (int k = 0; k < 2; ++k) {
                const uint32_t qlb = (ql >> (8 * k)) & 0xFF;
                const uint32_t qhb = (qh >> (8 * k)) & 0xFF;
                const uint32_t q_lo = (qlb & 0xF) | (((qhb >> shift) & 3) << 4);
                const uint32_t q_hi = (qlb >> 4) | (((qhb >> (shift + 4)) & 3) << 4);
                // run 2h: elements 128h + 2p + k; run 2h + 1: 128h + 64 + 2p + k
                w[4 * h + k] = fmaf(int_f(q_lo), s_lo, -32.0f * s_lo);
                w[4 * h + 2 + k] = fmaf(int_f(q_hi), s_hi, -32.0f * s_hi);
            }
        }
    }
    __device__ static float elem(const uint8_t* b, int j) {
        const int h = j >> 7;
        const int r = j & 127;
        const int k = r >> 5;  // which of the four quarters
        const int l = r & 31;
        const int is = l >> 4;
        const uint8_t qlb = b[64 * h + l + ((k & 1) ? 32 : 0)];
        const int low = (k < 2) ? (qlb & 0xF) : (qlb >> 4);
        const int high = (b[128 + 32 * h + l] >> (2 * k)) & 3;
        const int q = (low | (high << 4)) - 32;
        const float sc = static_cast<float>(static_cast<int8_t>(b[192 + 8 * h + is + 2 * k]));
        return __fmul_rn(__fmul_rn(half_at(b + 208), sc), static_cast<float>(q));
    }
};

// ---------------------------------------------------------------------------------------------
// Codebook types: a 4-bit index into a table of 16 int8 values (MXFP4's doubled E2M1 values,
// IQ4_NL's non-linear levels). The table lives in four registers; four indices are looked up at
// once with two byte permutes (indices 0-7 from the first pair of words, 8-15 from the second)
// and a per-byte select on bit 3 (the permute's own bit 3 would replicate a sign instead).
struct Codebook16 {
    uint32_t w[4];  // bytes 0..15 of the table, little-endian
};
// The int8 values of the four indices in the low nibbles of q's bytes, as four bytes.
__device__ __forceinline__ uint32_t lookup4(const Codebook16& t, uint32_t q) {
    const uint32_t i = q & 0x07070707u;
    const uint32_t sel = (i | (i >> 4)) & 0x00FF00FFu;
    const uint32_t s = (sel & 0xFFu) | (sel >> 8);  // four 3-bit selectors, one per nibble
    const uint32_t lo = __byte_perm(t.w[0], t.w[1], s);
    const uint32_t hi = __byte_perm(t.w[2], t.w[3], s);
    const uint32_t use_hi = ((q >> 3) & 0x01010101u) * 0xFFu;
    return (lo & ~use_hi) | (hi & use_hi);
}
// Byte k of a word of int8 values as a float, exactly.
__device__ __forceinline__ float sbyte_f(uint32_t v, int k) {
    return byte_f(v ^ 0x80808080u, k) - 128.0f;
}
__device__ __forceinline__ float sbyte_at(uint32_t v, int k) {
    return static_cast<float>(static_cast<int8_t>((v >> (8 * k)) & 0xFF));
}

// ggml's kvalues_mxfp4 and kvalues_iq4nl (tensor/blocks.h, the CPU's tables), packed four per
// word at compile time.
constexpr uint32_t pack4(const int8_t (&v)[16], int i) {
    return uint32_t(uint8_t(v[i])) | (uint32_t(uint8_t(v[i + 1])) << 8) |
           (uint32_t(uint8_t(v[i + 2])) << 16) | (uint32_t(uint8_t(v[i + 3])) << 24);
}
constexpr uint32_t kMx0 = pack4(kValuesMXFP4, 0), kMx1 = pack4(kValuesMXFP4, 4),
                   kMx2 = pack4(kValuesMXFP4, 8), kMx3 = pack4(kValuesMXFP4, 12);
constexpr uint32_t kNl0 = pack4(kValuesIQ4NL, 0), kNl1 = pack4(kValuesIQ4NL, 4),
                   kNl2 = pack4(kValuesIQ4NL, 8), kNl3 = pack4(kValuesIQ4NL, 12);
static_assert(kMx1 == 0x0C080604u && kNl0 == 0xBFAD9881u, "codebook packing");
__device__ __forceinline__ Codebook16 mxfp4_table() {
    return {{kMx0, kMx1, kMx2, kMx3}};
}
__device__ __forceinline__ Codebook16 iq4nl_table() {
    return {{kNl0, kNl1, kNl2, kNl3}};
}

// Half the E8M0 scale, 2^(e - 128), exactly (tensor/blocks.h e8m0_to_fp32_half).
__device__ __forceinline__ float e8m0_half(uint32_t e) {
    return __uint_as_float(e < 2 ? (0x00200000u << e) : ((e - 1) << 23));
}
__device__ __forceinline__ uint32_t u32_at_a1(const uint8_t* p) {  // any alignment
    return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}

// MXFP4: e (E8M0), qs[16] in Q4_0's nibble order; x = kvalues_mxfp4[q] * 2^(e - 128). 17-byte
// blocks have byte alignment only, so the GEMV reads bytes.
struct TMXFP4 {
    static constexpr int kElems = 32, kBytes = 17, kAlign = 1;
    static constexpr int kParts = 4, kE = 8, kRuns = 2, kRunLen = 4;
    __device__ static int run_start(int p, int r) { return 16 * r + 4 * p; }
    __device__ static void part(const uint8_t* b, int p, float (&w)[kE]) {
        const float d = e8m0_half(b[0]);
        const uint32_t q = u32_at_a1(b + 1 + 4 * p);
        const Codebook16 t = mxfp4_table();
        const uint32_t lo = lookup4(t, q & 0x0F0F0F0Fu), hi = lookup4(t, (q >> 4) & 0x0F0F0F0Fu);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            w[k] = sbyte_f(lo, k) * d;
            w[4 + k] = sbyte_f(hi, k) * d;
        }
    }
    __device__ static float elem(const uint8_t* b, int j) {
        const uint32_t v = lookup4(mxfp4_table(), uint32_t(legacy_nibble(b + 1, j)));
        return __fmul_rn(sbyte_at(v, 0), e8m0_half(b[0]));
    }
};

// IQ4_XS: d (fp16), scales_h (u16), scales_l[4], qs[128]; group g (0..7) of 32 has the 6-bit
// scale ls = low 4 bits from scales_l[g / 2] (nibble g % 2) | 2 bits of scales_h at 2g, and
// x = d * (ls - 32) * kvalues_iq4nl[q] with qs[16g..16g+16) in Q4_0's nibble order. Part p
// (0..15): group p / 2, bytes 8 (p % 2) .. +8 of it: runs 32g + 8 (p % 2) and 32g + 16 + 8 (p % 2).
struct TIQ4_XS {
    static constexpr int kElems = 256, kBytes = 136, kAlign = 4;
    static constexpr int kParts = 16, kE = 16, kRuns = 2, kRunLen = 8;
    __device__ static int run_start(int p, int r) { return 32 * (p >> 1) + 16 * r + 8 * (p & 1); }
    __device__ static int scale(const uint8_t* b, int g) {
        const int ls =
            ((b[4 + g / 2] >> (4 * (g & 1))) & 0x0F) | (((u16_at(b + 2) >> (2 * g)) & 3) << 4);
        return ls - 32;
    }
    __device__ static void part(const uint8_t* b, int p, float (&w)[kE]) {
        const int g = p >> 1;
        const float dl = half_at(b) * static_cast<float>(scale(b, g));
        const uint8_t* qs = b + 8 + 16 * g + 8 * (p & 1);
        const Codebook16 t = iq4nl_table();
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const uint32_t q = u32_at(qs + 4 * h);
            const uint32_t lo = lookup4(t, q & 0x0F0F0F0Fu),
                           hi = lookup4(t, (q >> 4) & 0x0F0F0F0Fu);
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                w[4 * h + k] = sbyte_f(lo, k) * dl;
                w[8 + 4 * h + k] = sbyte_f(hi, k) * dl;
            }
        }
    }
    __device__ static float elem(const uint8_t* b, int j) {
        const int g = j >> 5, l = j & 31;
        const float dl = __fmul_rn(half_at(b), static_cast<float>(scale(b, g)));
        const uint8_t qb = b[8 + 16 * g + (l & 15)];
        const uint32_t v = lookup4(iq4nl_table(), l < 16 ? (qb & 0xF) : (qb >> 4));
        return __fmul_rn(dl, sbyte_at(v, 0));
    }
};

// Plain float types: a "block" of one element.
struct TF32 {
    static constexpr int kElems = 1, kBytes = 4;
    __device__ static float elem(const uint8_t* b, int) {
        return *reinterpret_cast<const float*>(b);
    }
};
struct TF16 {
    static constexpr int kElems = 1, kBytes = 2;
    __device__ static float elem(const uint8_t* b, int) { return half_at(b); }
};
struct TBF16 {
    static constexpr int kElems = 1, kBytes = 2;
    __device__ static float elem(const uint8_t* b, int) { return __uint_as_float(u16_at(b) << 16); }
};

// ---------------------------------------------------------------------------------------------
// Host dispatch.

template <class F>
void dispatch_type(GgmlType type, F&& f) {
    switch (type) {
        case GgmlType::F32:
            return f(TF32{});
        case GgmlType::F16:
            return f(TF16{});
        case GgmlType::BF16:
            return f(TBF16{});
        case GgmlType::Q4_0:
            return f(TQ4_0{});
        case GgmlType::Q4_1:
            return f(TQ4_1{});
        case GgmlType::Q5_0:
            return f(TQ5_0{});
        case GgmlType::Q5_1:
            return f(TQ5_1{});
        case GgmlType::Q8_0:
            return f(TQ8_0{});
        case GgmlType::Q4_K:
            return f(TQ4_K{});
        case GgmlType::Q5_K:
            return f(TQ5_K{});
        case GgmlType::Q6_K:
            return f(TQ6_K{});
        case GgmlType::MXFP4:
            return f(TMXFP4{});
        case GgmlType::IQ4_XS:
            return f(TIQ4_XS{});
        default:
            break;
    }
    throw UnsupportedError("CUDA matmul: tensor type " + std::string(type_name(type)) +
                           " is not supported");
}

template <class Q>
constexpr bool kIsFloat = Q::kElems == 1;

}  // namespace fluoro::cuda::quant
