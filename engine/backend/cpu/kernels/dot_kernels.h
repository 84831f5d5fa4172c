// Internal to the CPU kernels: the row dot kernels of every supported weight type, as templates
// over a per-type block kernel. This header is compiled once per instruction set (dot_generic.cpp,
// dot_avx2.cpp), so everything in it has internal linkage: the copies differ in machine code and
// the linker must never merge them.
//
// A block kernel K describes one quantized weight type:
//   K::WBlock, K::XBlock      the weight block and the partner activation block (same length)
//   K::Decoded                one weight block unpacked to int8 values plus float scales
//   K::Acc                    a row's float accumulators: ggml's sumf (and sums[8] for k-quants)
//   decode(w, dec)            unpacks a weight block, once for the whole token tile
//   accumulate(dec, x, acc)   adds one block's product, in ggml's float operation order
//   finish(acc)               the row's result
// Integer sums are exact whatever their order, so only the float steps have to copy ggml-cpu's
// generic code (quants.c ggml_vec_dot_*_generic); each accumulate quotes the line it copies.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backend/cpu/kernels/dot_table.h"
#include "backend/cpu/kernels/vec_dot.h"
#include "tensor/blocks.h"
#include "tensor/ggml_type.h"
#include "tensor/iq_grids.h"

namespace fluoro::cpu::detail {
namespace {

// ---- scalar helpers ----

// fp16 -> fp32, exact. The exponent and mantissa bits moved into float position give the value
// times 2^-112 (the bias difference) for normal and subnormal halves alike, and the multiply by
// 2^112 is exact; inf/NaN (exponent 31) are patched with a mask. No branch or ternary, so loops
// of it vectorize. Needs the default FP mode (subnormal inputs not flushed to zero, i.e. no DAZ).
// Tested against the reference fp16_to_fp32() for all 65536 inputs.
inline float half_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t em = uint32_t(h & 0x7FFFu) << 13;
    const uint32_t finite = std::bit_cast<uint32_t>(std::bit_cast<float>(em) * 0x1.0p112f);
    const uint32_t special = 0x7F800000u | em;  // inf, NaN keeping its payload
    const uint32_t is_special = 0u - uint32_t(em >= (0x7C00u << 13));  // all ones or zero
    return std::bit_cast<float>(sign | (finite & ~is_special) | (special & is_special));
}

inline float bf16_to_float(uint16_t h) {
    return std::bit_cast<float>(uint32_t(h) << 16);
}

// Σ a[i]·b[i] over N int8 values, exact in int32.
template <int N>
inline int32_t dot_i8(const int8_t* a, const int8_t* b) {
    int32_t s = 0;
    for (int i = 0; i < N; ++i) s += int32_t(a[i]) * int32_t(b[i]);
    return s;
}

// ---- the row loop shared by all quantized types ----

// A segment of ~1024 weights is decoded into a small buffer, then each token of the tile runs
// over it: every weight block is read and decoded once per tile, and every token accumulates the
// blocks in row order, exactly as a single-row call does. Decoding ahead (rather than block by
// block) also keeps the int8 stores and the dot product's wide loads apart, so the loads do not
// stall on store-to-load forwarding.
template <class K, int NX>
void row_dot_blocks_fixed(const typename K::WBlock* w, const std::byte* x, size_t x_stride,
                          int64_t n_blocks, float* out) {
    using XBlock = typename K::XBlock;
    constexpr int64_t kSegment = K::WBlock::kElems >= 1024 ? 1 : 1024 / K::WBlock::kElems;
    typename K::Acc acc[NX] = {};
    typename K::Decoded dec[kSegment];
    for (int64_t b0 = 0; b0 < n_blocks; b0 += kSegment) {
        const int64_t len = n_blocks - b0 < kSegment ? n_blocks - b0 : kSegment;
        for (int64_t i = 0; i < len; ++i) K::decode(w[b0 + i], dec[i]);
        for (int t = 0; t < NX; ++t) {
            const auto* xt = reinterpret_cast<const XBlock*>(x + size_t(t) * x_stride) + b0;
            for (int64_t i = 0; i < len; ++i) K::accumulate(dec[i], xt[i], acc[t]);
        }
    }
    for (int t = 0; t < NX; ++t) out[t] = K::finish(acc[t]);
}

// The tile size is a template argument so the accumulators live in registers.
template <class K>
void row_dot_blocks(const void* w_row, const void* x, size_t x_stride, int n_x, int64_t n,
                    float* out) {
    static_assert(kMaxDotRows == 8);
    const auto* w = static_cast<const typename K::WBlock*>(w_row);
    const auto* xb = static_cast<const std::byte*>(x);
    const int64_t nb = n / K::WBlock::kElems;
    switch (n_x) {
        case 1:
            return row_dot_blocks_fixed<K, 1>(w, xb, x_stride, nb, out);
        case 2:
            return row_dot_blocks_fixed<K, 2>(w, xb, x_stride, nb, out);
        case 3:
            return row_dot_blocks_fixed<K, 3>(w, xb, x_stride, nb, out);
        case 4:
            return row_dot_blocks_fixed<K, 4>(w, xb, x_stride, nb, out);
        case 5:
            return row_dot_blocks_fixed<K, 5>(w, xb, x_stride, nb, out);
        case 6:
            return row_dot_blocks_fixed<K, 6>(w, xb, x_stride, nb, out);
        case 7:
            return row_dot_blocks_fixed<K, 7>(w, xb, x_stride, nb, out);
        default:
            return row_dot_blocks_fixed<K, 8>(w, xb, x_stride, nb, out);
    }
}

// ---- legacy 32-element blocks ----

struct LegacyKernel {
    struct Decoded {
        alignas(32) int8_t q[kQK];  // the integer each element multiplies d by
        float d;
        float m;  // Q4_1 / Q5_1 only
    };
    using Acc = float;
    static float finish(float sumf) { return sumf; }
};

// ---- SWAR unpacking ----
// Weight blocks are unpacked 8 bytes at a time in 64-bit integers: compilers vectorize byte-wise
// shifts poorly (x86 has none), and these few word operations beat scalar loops on every ISA.

inline uint64_t load_u64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}
inline void store_u64(int8_t* p, uint64_t v) {
    std::memcpy(p, &v, sizeof(v));
}

constexpr uint64_t kBytes01 = 0x0101010101010101ull;
constexpr uint64_t kNibbles = 0x0F0F0F0F0F0F0F0Full;
constexpr uint64_t kTopBits = 0x8080808080808080ull;

// Per byte v - offset as int8, for bytes v and offset in 0..127: setting each byte's top bit
// first means no byte borrows from its neighbour.
inline uint64_t sub_bytes(uint64_t v, uint8_t offset) {
    return ((v | kTopBits) - offset * kBytes01) ^ kTopBits;
}

// Byte k of kBitToByte[b] is bit k of b, moved to bit 4: the 5th bits of 8 Q5 elements.
constexpr auto kBitToByte = [] {
    std::array<uint64_t, 256> table{};
    for (uint64_t b = 0; b < 256; ++b)
        for (int k = 0; k < 8; ++k) table[b] |= ((b >> k) & 1) << (8 * k + 4);
    return table;
}();

// 32 elements of a legacy block: element j in the low nibble of qs[j], j+16 in the high nibble;
// qh (Q5 only, else null) supplies bit 4 of each; offset is subtracted last.
inline void unpack_legacy(const uint8_t* qs, const uint8_t* qh, uint8_t offset, int8_t* q) {
    for (int h = 0; h < 2; ++h) {
        const uint64_t v = load_u64(qs + 8 * h);
        uint64_t lo = v & kNibbles;
        uint64_t hi = (v >> 4) & kNibbles;
        if (qh) {
            lo |= kBitToByte[qh[h]];
            hi |= kBitToByte[qh[2 + h]];
        }
        store_u64(q + 8 * h, sub_bytes(lo, offset));
        store_u64(q + 16 + 8 * h, sub_bytes(hi, offset));
    }
}

struct Q4_0Kernel : LegacyKernel {
    using WBlock = BlockQ4_0;
    using XBlock = BlockQ8_0;
    static void decode(const WBlock& w, Decoded& dec) {
        unpack_legacy(w.qs, nullptr, 8, dec.q);
        dec.d = half_to_float(w.d);
    }
    static void accumulate(const Decoded& w, const XBlock& x, float& sumf) {
        const int32_t sumi = dot_i8<kQK>(w.q, x.qs);
        // sumf += sumi*GGML_CPU_FP16_TO_FP32(x[ib].d)*GGML_CPU_FP16_TO_FP32(y[ib].d);
        sumf += float(sumi) * w.d * half_to_float(x.d);
    }
};

struct Q4_1Kernel : LegacyKernel {
    using WBlock = BlockQ4_1;
    using XBlock = BlockQ8_1;
    static void decode(const WBlock& w, Decoded& dec) {
        unpack_legacy(w.qs, nullptr, 0, dec.q);
        dec.d = half_to_float(w.d);
        dec.m = half_to_float(w.m);
    }
    static void accumulate(const Decoded& w, const XBlock& x, float& sumf) {
        const int32_t sumi = dot_i8<kQK>(w.q, x.qs);
        // sumf += (d_x*d_y)*sumi + m_x*s_y;  (s_y = d_y·Σq_y, stored as fp16 in the Q8_1 block)
        sumf += (w.d * half_to_float(x.d)) * float(sumi) + w.m * half_to_float(x.s);
    }
};

struct Q5_0Kernel : LegacyKernel {
    using WBlock = BlockQ5_0;
    using XBlock = BlockQ8_0;
    static void decode(const WBlock& w, Decoded& dec) {
        unpack_legacy(w.qs, w.qh, 16, dec.q);
        dec.d = half_to_float(w.d);
    }
    static void accumulate(const Decoded& w, const XBlock& x, float& sumf) {
        const int32_t sumi = dot_i8<kQK>(w.q, x.qs);
        // sumf += (GGML_CPU_FP16_TO_FP32(x[ib].d)*GGML_CPU_FP16_TO_FP32(y[ib].d)) * sumi;
        sumf += (w.d * half_to_float(x.d)) * float(sumi);
    }
};

struct Q5_1Kernel : LegacyKernel {
    using WBlock = BlockQ5_1;
    using XBlock = BlockQ8_1;
    static void decode(const WBlock& w, Decoded& dec) {
        unpack_legacy(w.qs, w.qh, 0, dec.q);
        dec.d = half_to_float(w.d);
        dec.m = half_to_float(w.m);
    }
    static void accumulate(const Decoded& w, const XBlock& x, float& sumf) {
        const int32_t sumi = dot_i8<kQK>(w.q, x.qs);
        // sumf += (d_x*d_y)*sumi + m_x*s_y;
        sumf += (w.d * half_to_float(x.d)) * float(sumi) + w.m * half_to_float(x.s);
    }
};

struct Q8_0Kernel : LegacyKernel {
    using WBlock = BlockQ8_0;
    using XBlock = BlockQ8_0;
    static void decode(const WBlock& w, Decoded& dec) {
        std::memcpy(dec.q, w.qs, kQK);
        dec.d = half_to_float(w.d);
    }
    static void accumulate(const Decoded& w, const XBlock& x, float& sumf) {
        const int32_t sumi = dot_i8<kQK>(w.q, x.qs);
        // sumf += sumi*(GGML_CPU_FP16_TO_FP32(x[ib].d)*GGML_CPU_FP16_TO_FP32(y[ib].d));
        sumf += float(sumi) * (w.d * half_to_float(x.d));
    }
};

struct IQ4_NLKernel : LegacyKernel {
    using WBlock = BlockIQ4_NL;
    using XBlock = BlockQ8_0;
    static void decode(const WBlock& w, Decoded& dec) {
        for (int j = 0; j < kQK / 2; ++j) dec.q[j] = kValuesIQ4NL[w.qs[j] & 0x0F];
        for (int j = 0; j < kQK / 2; ++j) dec.q[j + kQK / 2] = kValuesIQ4NL[w.qs[j] >> 4];
        dec.d = half_to_float(w.d);
    }
    static void accumulate(const Decoded& w, const XBlock& x, float& sumf) {
        const int32_t sumi = dot_i8<kQK>(w.q, x.qs);
        // d = FP16_TO_FP32(y[ib].d)*FP16_TO_FP32(x[ib].d); sumf += d * (sumi1 + sumi2);
        sumf += (half_to_float(x.d) * w.d) * float(sumi);
    }
};

// The scale is a bare power of two (E8M0) and the values are ggml's doubled E2M1 integers.
struct MXFP4Kernel : LegacyKernel {
    using WBlock = BlockMXFP4;
    using XBlock = BlockQ8_0;
    static void decode(const WBlock& w, Decoded& dec) {
        for (int j = 0; j < kQK / 2; ++j) dec.q[j] = kValuesMXFP4[w.qs[j] & 0x0F];
        for (int j = 0; j < kQK / 2; ++j) dec.q[j + kQK / 2] = kValuesMXFP4[w.qs[j] >> 4];
        dec.d = e8m0_to_fp32_half(w.e);
    }
    static void accumulate(const Decoded& w, const XBlock& x, float& sumf) {
        const int32_t sumi = dot_i8<kQK>(w.q, x.qs);
        // d = FP16_TO_FP32(y[ib].d)*E8M0_TO_FP32_HALF(x[ib].e); sumf += d * (sumi1 + sumi2);
        sumf += (half_to_float(x.d) * w.d) * float(sumi);
    }
};

// ---- k-quants: 256-element super-blocks against Q8_K ----

// ggml's generic k-quant loops keep eight float lanes (sums[l] gathers the elements with index
// ≡ l mod 8) next to sumf and add the lanes into sumf at the end of the row.
struct KAcc {
    float sums[8];
    float sumf;
};

inline float finish_k(const KAcc& acc) {
    float sumf = acc.sumf;
    for (int l = 0; l < 8; ++l) sumf += acc.sums[l];  // for (l) sumf += sums[l];
    return sumf;
}

// ggml's eight lanes as GCC/Clang vector extensions (AVX2: one register per vector; SSE2: two).
// The compilers' auto-vectorizers handle the lane pattern only sometimes (inlined into some
// callers they scalarized it, 4x slower); spelled as vectors it always runs 16 elements at a time.
typedef int8_t I8x16 __attribute__((vector_size(16)));
typedef int16_t I16x16 __attribute__((vector_size(32)));
typedef int16_t I16x8 __attribute__((vector_size(16)));
typedef int32_t I32x8 __attribute__((vector_size(32)));

// (Out-parameter rather than return value: returning a 32-byte vector from a function compiled
// without AVX has a different ABI, which GCC warns about even when the call is inlined.)
inline void load_i16x16(const int8_t* p, I16x16& out) {
    I8x16 v;
    std::memcpy(&v, p, sizeof(v));
    out = __builtin_convertvector(v, I16x16);
}

// aux32[l] = Σ_s scale[s] · Σ_{i in sub-block s, i ≡ l mod 8} q[i]·x[i]: ggml's aux32 lanes, for
// NSub sub-blocks of SubLen elements each. Within a sub-block the products are summed in int16,
// exactly: k-quant values have |q| <= 32 and |x| <= 128, so a lane's 4 products stay <= 16384.
template <int SubLen, int NSub>
inline void scaled_lane_sums(const int8_t* q, const int8_t* x, const int32_t* scale,
                             int32_t (&aux32)[8]) {
    static_assert(SubLen == 16 || SubLen == 32);
    I32x8 aux = {};
    for (int s = 0; s < NSub; ++s) {
        I16x16 sub = {};
        for (int g = 0; g < SubLen; g += 16) {
            I16x16 qv, xv;
            load_i16x16(q + s * SubLen + g, qv);
            load_i16x16(x + s * SubLen + g, xv);
            sub += qv * xv;
        }
        // Element k of the 16 belongs to lane k mod 8: fold the halves.
        const I16x8 lanes = __builtin_shufflevector(sub, sub, 0, 1, 2, 3, 4, 5, 6, 7) +
                            __builtin_shufflevector(sub, sub, 8, 9, 10, 11, 12, 13, 14, 15);
        aux += scale[s] * __builtin_convertvector(lanes, I32x8);
    }
    std::memcpy(aux32, &aux, sizeof(aux32));
}

// The 6-bit scales and mins of Q4_K/Q5_K (ggml's get_scale_min_k4).
inline void unpack_scale_min_k4(const uint8_t* s, int32_t* scale, int32_t* min) {
    for (int j = 0; j < 4; ++j) {
        scale[j] = s[j] & 63;
        min[j] = s[j + 4] & 63;
    }
    for (int j = 4; j < 8; ++j) {
        scale[j] = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
        min[j] = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

struct Q4_KKernel {
    using WBlock = BlockQ4_K;
    using XBlock = BlockQ8_K;
    using Acc = KAcc;
    struct Decoded {
        alignas(32) int8_t q[kQK_K];  // 0..15 (0..31 for Q5_K)
        int32_t scale[8];             // per 32-element sub-block
        int32_t min[8];
        float d;
        float dmin;
    };
    static void decode(const WBlock& w, Decoded& dec) {
        for (int g = 0; g < 4; ++g) {  // chunk g: low nibbles -> 64g.., high nibbles -> 64g+32..
            for (int l = 0; l < 32; l += 8) {
                const uint64_t v = load_u64(w.qs + 32 * g + l);
                store_u64(dec.q + 64 * g + l, v & kNibbles);
                store_u64(dec.q + 64 * g + 32 + l, (v >> 4) & kNibbles);
            }
        }
        unpack_scale_min_k4(w.scales, dec.scale, dec.min);
        dec.d = half_to_float(w.d);
        dec.dmin = half_to_float(w.dmin);
    }
    static void accumulate(const Decoded& w, const XBlock& x, KAcc& acc) {
        int32_t aux32[8];
        scaled_lane_sums<32, 8>(w.q, x.qs, w.scale, aux32);
        int32_t sumi = 0;
        for (int j = 0; j < kQK_K / 16; ++j) sumi += x.bsums[j] * w.min[j / 2];
        // d = FP16_TO_FP32(x[i].d) * y[i].d; sums[l] += d * aux32[l];
        const float d = w.d * x.d;
        for (int l = 0; l < 8; ++l) acc.sums[l] += d * float(aux32[l]);
        // dmin = FP16_TO_FP32(x[i].dmin) * y[i].d; sumf -= dmin * sumi;
        const float dmin = w.dmin * x.d;
        acc.sumf -= dmin * float(sumi);
    }
    static float finish(const KAcc& acc) { return finish_k(acc); }
};

struct Q5_KKernel : Q4_KKernel {
    using WBlock = BlockQ5_K;
    static void decode(const WBlock& w, Decoded& dec) {
        // As Q4_K; bit 2g of qh[l] is the 5th bit of the low-nibble element, bit 2g+1 the high's.
        for (int g = 0; g < 4; ++g) {
            for (int l = 0; l < 32; l += 8) {
                const uint64_t v = load_u64(w.qs + 32 * g + l);
                const uint64_t h = load_u64(w.qh + l);
                const uint64_t h_lo = ((h >> (2 * g)) & kBytes01) << 4;
                const uint64_t h_hi = ((h >> (2 * g + 1)) & kBytes01) << 4;
                store_u64(dec.q + 64 * g + l, (v & kNibbles) | h_lo);
                store_u64(dec.q + 64 * g + 32 + l, ((v >> 4) & kNibbles) | h_hi);
            }
        }
        unpack_scale_min_k4(w.scales, dec.scale, dec.min);
        dec.d = half_to_float(w.d);
        dec.dmin = half_to_float(w.dmin);
    }
};

// Q3_K and Q6_K: 16 sub-blocks of 16 with signed scales, no min.
struct SignedScaleKDecoded {
    alignas(32) int8_t q[kQK_K];  // signed quant values (Q3_K: -4..3, Q6_K: -32..31)
    int32_t scale[16];            // per 16-element sub-block
    float d;
};

inline void accumulate_signed_k(const SignedScaleKDecoded& w, const BlockQ8_K& x, KAcc& acc) {
    int32_t aux32[8];
    scaled_lane_sums<16, 16>(w.q, x.qs, w.scale, aux32);
    // d = FP16_TO_FP32(x[i].d) * y[i].d; sums[l] += d * aux32[l];
    const float d = w.d * x.d;
    for (int l = 0; l < 8; ++l) acc.sums[l] += d * float(aux32[l]);
}

struct Q3_KKernel {
    using WBlock = BlockQ3_K;
    using XBlock = BlockQ8_K;
    using Acc = KAcc;
    using Decoded = SignedScaleKDecoded;
    static void decode(const WBlock& w, Decoded& dec) {
        // Two halves of 128; shift j (bits 2j) covers 32 elements; hmask bit m runs over both.
        // q - (hbit ? 0 : 4) computed as (q + 4·hbit) - 4.
        for (int h = 0; h < 2; ++h) {
            for (int j = 0; j < 4; ++j) {
                const int m = 4 * h + j;
                for (int l = 0; l < 32; l += 8) {
                    const uint64_t q = (load_u64(w.qs + 32 * h + l) >> (2 * j)) & (3 * kBytes01);
                    const uint64_t hbit = (load_u64(w.hmask + l) >> m) & kBytes01;
                    store_u64(dec.q + 128 * h + 32 * j + l, sub_bytes(q | (hbit << 2), 4));
                }
            }
        }
        for (int i = 0; i < 16; ++i) {
            const int low = i < 8 ? (w.scales[i] & 0x0F) : (w.scales[i - 8] >> 4);
            const int high = (w.scales[8 + i % 4] >> (2 * (i / 4))) & 3;
            dec.scale[i] = (low | (high << 4)) - 32;
        }
        dec.d = half_to_float(w.d);
    }
    static void accumulate(const Decoded& w, const XBlock& x, KAcc& acc) {
        accumulate_signed_k(w, x, acc);
    }
    static float finish(const KAcc& acc) { return finish_k(acc); }
};

struct Q6_KKernel {
    using WBlock = BlockQ6_K;
    using XBlock = BlockQ8_K;
    using Acc = KAcc;
    using Decoded = SignedScaleKDecoded;
    static void decode(const WBlock& w, Decoded& dec) {
        for (int h = 0; h < 2; ++h) {
            const uint8_t* ql = w.ql + 64 * h;
            const uint8_t* qh = w.qh + 32 * h;
            int8_t* a = dec.q + 128 * h;
            for (int l = 0; l < 32; l += 8) {
                const uint64_t lo = load_u64(ql + l);       // elements l and l+64
                const uint64_t hi = load_u64(ql + 32 + l);  // elements l+32 and l+96
                const uint64_t bits = load_u64(qh + l);
                const auto high2 = [bits](int shift) {
                    return ((bits >> shift) & (3 * kBytes01)) << 4;
                };
                store_u64(a + l, sub_bytes((lo & kNibbles) | high2(0), 32));
                store_u64(a + l + 32, sub_bytes((hi & kNibbles) | high2(2), 32));
                store_u64(a + l + 64, sub_bytes(((lo >> 4) & kNibbles) | high2(4), 32));
                store_u64(a + l + 96, sub_bytes(((hi >> 4) & kNibbles) | high2(6), 32));
            }
        }
        for (int i = 0; i < 16; ++i) dec.scale[i] = w.scales[i];
        dec.d = half_to_float(w.d);
    }
    static void accumulate(const Decoded& w, const XBlock& x, KAcc& acc) {
        accumulate_signed_k(w, x, acc);
    }
    static float finish(const KAcc& acc) { return finish_k(acc); }
};

// Q2_K's generic loop has no lanes: one integer sum per super-block.
struct Q2_KKernel {
    using WBlock = BlockQ2_K;
    using XBlock = BlockQ8_K;
    using Acc = float;
    struct Decoded {
        alignas(32) int8_t q[kQK_K];  // 0..3
        int32_t scale[16];
        int32_t min[16];
        float d;
        float dmin;
    };
    static void decode(const WBlock& w, Decoded& dec) {
        for (int h = 0; h < 2; ++h)
            for (int j = 0; j < 4; ++j)
                for (int l = 0; l < 32; l += 8) {
                    const uint64_t v = load_u64(w.qs + 32 * h + l);
                    store_u64(dec.q + 128 * h + 32 * j + l, (v >> (2 * j)) & (3 * kBytes01));
                }
        for (int i = 0; i < 16; ++i) {
            dec.scale[i] = w.scales[i] & 0x0F;
            dec.min[i] = w.scales[i] >> 4;
        }
        dec.d = half_to_float(w.d);
        dec.dmin = half_to_float(w.dmin);
    }
    static void accumulate(const Decoded& w, const XBlock& x, float& sumf) {
        int32_t isum = 0;
        for (int s = 0; s < 16; ++s) isum += w.scale[s] * dot_i8<16>(w.q + 16 * s, x.qs + 16 * s);
        int32_t summs = 0;
        for (int j = 0; j < 16; ++j) summs += x.bsums[j] * w.min[j];
        // dall = y[i].d * FP16_TO_FP32(x[i].d); dmin = y[i].d * FP16_TO_FP32(x[i].dmin);
        // sumf += dall * isum - dmin * summs;
        const float dall = x.d * w.d;
        const float dmin = x.d * w.dmin;
        sumf += dall * float(isum) - dmin * float(summs);
    }
    static float finish(float sumf) { return sumf; }
};

// ---- IQ super-blocks against Q8_K ----

// IQ4_XS: IQ4_NL's values in 8 groups of 32, each with a 6-bit scale (ls - 32).
struct IQ4_XSKernel {
    using WBlock = BlockIQ4_XS;
    using XBlock = BlockQ8_K;
    using Acc = float;
    struct Decoded {
        alignas(32) int8_t q[kQK_K];
        int32_t ls[8];  // ls - 32
        float d;
    };
    static void decode(const WBlock& w, Decoded& dec) {
        for (int ib = 0; ib < 8; ++ib) {
            const uint8_t* qs = w.qs + 16 * ib;
            for (int j = 0; j < 16; ++j) dec.q[32 * ib + j] = kValuesIQ4NL[qs[j] & 0x0F];
            for (int j = 0; j < 16; ++j) dec.q[32 * ib + 16 + j] = kValuesIQ4NL[qs[j] >> 4];
            dec.ls[ib] = (((w.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) |
                          (((w.scales_h >> (2 * ib)) & 3) << 4)) -
                         32;
        }
        dec.d = half_to_float(w.d);
    }
    static void accumulate(const Decoded& w, const XBlock& x, float& sumf) {
        // d4d8 = FP16_TO_FP32(x[ibl].d) * y[ibl].d;
        const float d4d8 = w.d * x.d;
        for (int ib = 0; ib < 8; ++ib) {
            // d1 = d4d8*(ls1 - 32); sumf += d1 * (sumi1 + sumi2);
            const int32_t sumi = dot_i8<32>(w.q + 32 * ib, x.qs + 32 * ib);
            sumf += (d4d8 * float(w.ls[ib])) * float(sumi);
        }
    }
    static float finish(float sumf) { return sumf; }
};

// Byte k of kSignMask[s] is 0xFF where bit k of s is set.
constexpr auto kSignMask = [] {
    std::array<uint64_t, 256> table{};
    for (uint64_t s = 0; s < 256; ++s)
        for (int k = 0; k < 8; ++k) table[s] |= ((s >> k) & 1) * (0xFFull << (8 * k));
    return table;
}();

// 8 grid magnitudes (bytes, all 1..62) with their signs, stored as int8: a negated byte is
// (v ^ 0xFF) + 1, and since v >= 1 no byte carries into the next.
inline void put_signed_grid(uint64_t magnitudes, uint8_t signs, int8_t* q) {
    const uint64_t m = kSignMask[signs];
    store_u64(q, (magnitudes ^ m) + (m & kBytes01));
}

// The IQ2/IQ3 grid types: signed grid values, an odd integer scale ls per sub-block of SubLen.
// ggml's generic loops sum ls · Σq·x over the super-block in int32, add d · bsum into sumf and
// scale the row's sum once at the end (0.125 for IQ2, 0.25 for IQ3_XXS, 1 for IQ3_S: the grids'
// magnitudes are stored 8, 4 or 1 times too large).
template <int SubLen>
struct IQGridKernelBase {
    static constexpr int kSub = kQK_K / SubLen;
    using XBlock = BlockQ8_K;
    using Acc = float;
    struct Decoded {
        alignas(32) int8_t q[kQK_K];
        int32_t ls[kSub];
        float d;
    };
    static void accumulate(const Decoded& w, const XBlock& x, float& sumf) {
        int32_t bsum = 0;
        for (int s = 0; s < kSub; ++s)
            bsum += w.ls[s] * dot_i8<SubLen>(w.q + SubLen * s, x.qs + SubLen * s);
        // d = FP16_TO_FP32(x[i].d) * y[i].d; sumf += d * bsum;
        sumf += (w.d * x.d) * float(bsum);
    }
};

inline uint32_t load_u32(const void* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}

struct IQ2_XXSKernel : IQGridKernelBase<32> {
    using WBlock = BlockIQ2_XXS;
    static void decode(const WBlock& w, Decoded& dec) {
        for (int ib = 0; ib < 8; ++ib) {
            const uint32_t idx = load_u32(w.qs + 4 * ib);
            const uint32_t aux = load_u32(w.qs + 4 * ib + 2);
            for (int l = 0; l < 4; ++l)
                put_signed_grid(kIQ2XXSGrid[(idx >> (8 * l)) & 0xFF],
                                kSignsIQ2XS[(aux >> (7 * l)) & 127], dec.q + 32 * ib + 8 * l);
            dec.ls[ib] = int32_t(2 * (aux >> 28) + 1);
        }
        dec.d = half_to_float(w.d);
    }
    static float finish(float sumf) { return 0.125f * sumf; }  // *s = 0.125f * sumf;
};

struct IQ2_XSKernel : IQGridKernelBase<16> {
    using WBlock = BlockIQ2_XS;
    static void decode(const WBlock& w, Decoded& dec) {
        for (int g = 0; g < 32; ++g)
            put_signed_grid(kIQ2XSGrid[w.qs[g] & 511], kSignsIQ2XS[w.qs[g] >> 9], dec.q + 8 * g);
        for (int ib = 0; ib < 8; ++ib) {
            dec.ls[2 * ib] = 2 * (w.scales[ib] & 0x0F) + 1;
            dec.ls[2 * ib + 1] = 2 * (w.scales[ib] >> 4) + 1;
        }
        dec.d = half_to_float(w.d);
    }
    static float finish(float sumf) { return 0.125f * sumf; }
};

struct IQ2_SKernel : IQGridKernelBase<16> {
    using WBlock = BlockIQ2_S;
    static void decode(const WBlock& w, Decoded& dec) {
        const uint8_t* signs = w.qs + kQK_K / 8;
        for (int g = 0; g < 32; ++g) {
            const int ib = g / 4, l = g % 4;
            const int index = w.qs[g] | ((w.qh[ib] << (8 - 2 * l)) & 0x300);
            put_signed_grid(kIQ2SGrid[index], signs[g], dec.q + 8 * g);
        }
        for (int ib = 0; ib < 8; ++ib) {
            dec.ls[2 * ib] = 2 * (w.scales[ib] & 0x0F) + 1;
            dec.ls[2 * ib + 1] = 2 * (w.scales[ib] >> 4) + 1;
        }
        dec.d = half_to_float(w.d);
    }
    static float finish(float sumf) { return 0.125f * sumf; }
};

struct IQ3_XXSKernel : IQGridKernelBase<32> {
    using WBlock = BlockIQ3_XXS;
    static void decode(const WBlock& w, Decoded& dec) {
        const uint8_t* scales_and_signs = w.qs + kQK_K / 4;
        for (int ib = 0; ib < 8; ++ib) {
            const uint32_t aux = load_u32(scales_and_signs + 4 * ib);
            const uint8_t* qs = w.qs + 8 * ib;
            for (int l = 0; l < 4; ++l) {
                const uint64_t pair =
                    uint64_t(kIQ3XXSGrid[qs[2 * l]]) | uint64_t(kIQ3XXSGrid[qs[2 * l + 1]]) << 32;
                put_signed_grid(pair, kSignsIQ2XS[(aux >> (7 * l)) & 127], dec.q + 32 * ib + 8 * l);
            }
            dec.ls[ib] = int32_t(2 * (aux >> 28) + 1);
        }
        dec.d = half_to_float(w.d);
    }
    static float finish(float sumf) { return 0.25f * sumf; }  // *s = 0.25f * sumf;
};

struct IQ3_SKernel : IQGridKernelBase<32> {
    using WBlock = BlockIQ3_S;
    static void decode(const WBlock& w, Decoded& dec) {
        for (int ib = 0; ib < 8; ++ib) {
            const uint8_t* qs = w.qs + 8 * ib;
            const int qh = w.qh[ib];
            for (int l = 0; l < 4; ++l) {
                const int i1 = qs[2 * l] | ((qh << (8 - 2 * l)) & 256);
                const int i2 = qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256);
                const uint64_t pair = uint64_t(kIQ3SGrid[i1]) | uint64_t(kIQ3SGrid[i2]) << 32;
                put_signed_grid(pair, w.signs[4 * ib + l], dec.q + 32 * ib + 8 * l);
            }
            dec.ls[ib] = 2 * ((w.scales[ib / 2] >> (4 * (ib % 2))) & 0x0F) + 1;
        }
        dec.d = half_to_float(w.d);
    }
    static float finish(float sumf) { return sumf; }
};

// IQ1_S / IQ1_M: grid values -1, 0, 1 with an odd scale ls and a ±1/8 shift per group of 8.
// ggml's generic loops keep two integer sums per super-block, Σ ls·Σq·x and Σ ls·shift·Σx, and
// add d·d_x·(sumi + 1/8·sumi1) into sumf.
struct IQ1Kernel {
    using XBlock = BlockQ8_K;
    using Acc = float;
    struct Decoded {
        alignas(32) int8_t q[kQK_K];
        int32_t ls[32];     // per group of 8
        int32_t shift[32];  // ±1 per group of 8
        float d;
    };
    static void accumulate(const Decoded& w, const XBlock& x, float& sumf) {
        int32_t sumi = 0, sumi1 = 0;
        for (int g = 0; g < 32; ++g) {
            int32_t xsum = 0;
            for (int j = 0; j < 8; ++j) xsum += x.qs[8 * g + j];
            sumi += w.ls[g] * dot_i8<8>(w.q + 8 * g, x.qs + 8 * g);
            sumi1 += w.ls[g] * w.shift[g] * xsum;
        }
        // sumf += FP16_TO_FP32(x[i].d) * y[i].d * (sumi + IQ1S_DELTA * sumi1);
        sumf += w.d * x.d * (float(sumi) + kIQ1Delta * float(sumi1));
    }
    static float finish(float sumf) { return sumf; }
};

struct IQ1_SKernel : IQ1Kernel {
    using WBlock = BlockIQ1_S;
    static void decode(const WBlock& w, Decoded& dec) {
        for (int ib = 0; ib < 8; ++ib) {
            const int qh = w.qh[ib];
            for (int l = 0; l < 4; ++l) {
                const int g = 4 * ib + l;
                store_u64(dec.q + 8 * g, kIQ1SGrid[w.qs[g] | (((qh >> (3 * l)) & 7) << 8)]);
                dec.ls[g] = 2 * ((qh >> 12) & 7) + 1;
                dec.shift[g] = qh & 0x8000 ? -1 : 1;
            }
        }
        dec.d = half_to_float(w.d);
    }
};

struct IQ1_MKernel : IQ1Kernel {
    using WBlock = BlockIQ1_M;
    static void decode(const WBlock& w, Decoded& dec) {
        for (int ib = 0; ib < 8; ++ib) {
            const int sc = w.scales[2 * (ib / 2)] | w.scales[2 * (ib / 2) + 1] << 8;
            const int shift = 6 * (ib % 2);
            for (int l = 0; l < 4; ++l) {
                const int g = 4 * ib + l;
                const int qh = w.qh[2 * ib + l / 2] >> (4 * (l % 2));
                store_u64(dec.q + 8 * g, kIQ1SGrid[w.qs[g] | ((qh & 7) << 8)]);
                dec.ls[g] = 2 * ((sc >> (shift + 3 * (l / 2))) & 7) + 1;
                dec.shift[g] = qh & 8 ? -1 : 1;
            }
        }
        dec.d = half_to_float(iq1m_scale_bits(w.scales));
    }
};

// ---- plain float types ----

struct F32Format {
    using T = float;
    static float load(float v) { return v; }
};
struct F16Format {
    using T = uint16_t;
    static float load(uint16_t v) { return half_to_float(v); }
};
struct BF16Format {
    using T = uint16_t;
    static float load(uint16_t v) { return bf16_to_float(v); }
};

// Weights and activations both in format F (F32·F32, F16·F16, BF16·BF16). Like ggml's scalar
// ggml_vec_dot_f16/bf16/f32, each product is rounded to float and accumulated in double; the
// double sum is split over 8 lanes so it vectorizes (a different order than ggml's one running
// sum, which changes the result only in double rounding, far below the final float rounding).
// The chunk src[0..len) as floats: F32 rows are used in place, 16-bit ones converted into buf
// (a plain conversion loop vectorizes; converting inside the dot loop did not).
template <class F>
inline const float* chunk_as_floats(const typename F::T* src, int64_t len, float* buf) {
    if constexpr (std::is_same_v<typename F::T, float>) {
        return src;
    } else {
        for (int64_t i = 0; i < len; ++i) buf[i] = F::load(src[i]);
        return buf;
    }
}

template <class F>
void row_dot_float(const void* w_row, const void* x, size_t x_stride, int n_x, int64_t n,
                   float* out) {
    using T = typename F::T;
    constexpr int kLanes = 8;
    constexpr int64_t kChunk = 512;  // weights converted once per token tile, kept in L1
    const auto* w = static_cast<const T*>(w_row);
    const auto* x_bytes = static_cast<const std::byte*>(x);

    alignas(64) float w_buf[kChunk];
    alignas(64) float x_buf[kChunk];
    double acc[kMaxDotRows][kLanes] = {};
    for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
        const int64_t len = n - i0 < kChunk ? n - i0 : kChunk;
        const int64_t body = len - len % kLanes;
        const float* wc = chunk_as_floats<F>(w + i0, len, w_buf);
        for (int t = 0; t < n_x; ++t) {
            const T* xt = reinterpret_cast<const T*>(x_bytes + size_t(t) * x_stride) + i0;
            const float* xc = chunk_as_floats<F>(xt, len, x_buf);
            double* a = acc[t];
            for (int64_t i = 0; i < body; i += kLanes)
                for (int l = 0; l < kLanes; ++l) a[l] += double(wc[i + l] * xc[i + l]);
            for (int64_t i = body; i < len; ++i) a[0] += double(wc[i] * xc[i]);
        }
    }
    for (int t = 0; t < n_x; ++t) {
        double sum = 0;
        for (int l = 0; l < kLanes; ++l) sum += acc[t][l];
        out[t] = float(sum);
    }
}

// ---- the table ----

inline DotTable make_dot_table() {
    DotTable table{};
    const auto set = [&table](GgmlType type, RowDotFn fn) {
        table[static_cast<size_t>(type)] = fn;
    };
    set(GgmlType::F32, &row_dot_float<F32Format>);
    set(GgmlType::F16, &row_dot_float<F16Format>);
    set(GgmlType::BF16, &row_dot_float<BF16Format>);
    set(GgmlType::Q4_0, &row_dot_blocks<Q4_0Kernel>);
    set(GgmlType::Q4_1, &row_dot_blocks<Q4_1Kernel>);
    set(GgmlType::Q5_0, &row_dot_blocks<Q5_0Kernel>);
    set(GgmlType::Q5_1, &row_dot_blocks<Q5_1Kernel>);
    set(GgmlType::Q8_0, &row_dot_blocks<Q8_0Kernel>);
    set(GgmlType::IQ4_NL, &row_dot_blocks<IQ4_NLKernel>);
    set(GgmlType::MXFP4, &row_dot_blocks<MXFP4Kernel>);
    set(GgmlType::Q2_K, &row_dot_blocks<Q2_KKernel>);
    set(GgmlType::Q3_K, &row_dot_blocks<Q3_KKernel>);
    set(GgmlType::Q4_K, &row_dot_blocks<Q4_KKernel>);
    set(GgmlType::Q5_K, &row_dot_blocks<Q5_KKernel>);
    set(GgmlType::Q6_K, &row_dot_blocks<Q6_KKernel>);
    set(GgmlType::IQ4_XS, &row_dot_blocks<IQ4_XSKernel>);
    set(GgmlType::IQ2_XXS, &row_dot_blocks<IQ2_XXSKernel>);
    set(GgmlType::IQ2_XS, &row_dot_blocks<IQ2_XSKernel>);
    set(GgmlType::IQ2_S, &row_dot_blocks<IQ2_SKernel>);
    set(GgmlType::IQ3_XXS, &row_dot_blocks<IQ3_XXSKernel>);
    set(GgmlType::IQ3_S, &row_dot_blocks<IQ3_SKernel>);
    set(GgmlType::IQ1_S, &row_dot_blocks<IQ1_SKernel>);
    set(GgmlType::IQ1_M, &row_dot_blocks<IQ1_MKernel>);
    return table;
}

}  // namespace
}  // namespace fluoro::cpu::detail
