// Internal to the CPU kernels: the row-group kernels for interleaved weights (interleave.h), x86.
// Included by dot_avx2.cpp and dot_avx512.cpp inside their target regions; built on the helpers
// of dot_x86_kernels.h.
//
// Q4_1 and Q5_0 (BlockQ4_1x8, BlockQ5_0x8): each 32-bit lane of a register is one of the eight
// rows, 4 of its bytes against the same 4 activation bytes broadcast to every lane, so a row's
// block sum forms in its own lane and one FMA per token applies all eight rows' scales
// (LaneGroupDot below). With AVX-512 VNNI, LaneGroupPairDot runs two adjacent groups in the 16
// lanes of a 512-bit register, each row with exactly LaneGroupDot's operations.
//
// Q8_0 (two halves of four rows, BlockQ8_0x4): per half block, one conversion handles the four
// rows' fp16 scales; the quants of rows 0|1 and 2|3 fill two 256-bit registers per 16 elements,
// each 128-bit half one row, against the activation block's 16 + 16 bytes broadcast to both
// halves. A horizontal add (fold_group) folds the four rows' sums into [r0 r0 r2 r2 | r1 r1 r3 r3]
// and one FMA applies the four scales:
//   v += (d_r · d_x) · Σ q_w·q_x      two lanes per row, each the sum of 16 products
// and a row's result is the sum of its two lanes. With AVX-512 VNNI, Q8_0x8Vnni512 computes the
// same two partial sums per row for all eight rows at once, from unsigned quants w + 128.
//
// The activations' scales come as floats (BlockQ8_1Wide / BlockQ8_0Wide), broadcast from memory.
// The integer sums are exact, so vpdpbusd (AVX-512 VNNI) and maddubs + madd (AVX2) give the same
// bits. Every token runs the same operations whatever the tile, so prefill, decode and
// speculative verification agree. Against the GGUF-layout kernels only the float order differs.
#pragma once

#include "backend/cpu/kernels/dot_x86_kernels.h"
#include "backend/cpu/kernels/interleave.h"

namespace fluoro::cpu::detail {
namespace {
namespace x86 {

// Four activation bytes as one int32, to broadcast to every lane.
inline int32_t bytes4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}

// Unsigned a times signed b, not yet widened: each int16 lane is two products from lo plus two
// from hi.
inline __m256i pair_sums(__m256i a_lo, __m256i b_lo, __m256i a_hi, __m256i b_hi) {
    return _mm256_add_epi16(_mm256_maddubs_epi16(a_lo, b_lo), _mm256_maddubs_epi16(a_hi, b_hi));
}

// ---- Q4_1 and Q5_0: a lane per row ----

// Chunk c of a BlockQ4_1x8 / BlockQ5_0x8 holds elements 4c..4c+3 (lo) and 16+4c..16+4c+3 (hi)
// of all eight rows as unsigned quants, one row per 32-bit lane; the activation's matching 4 bytes
// are broadcast to every lane, so each lane sums its own row and the block's eight sums need no
// horizontal add. W supplies the block's unpacking and scales:
//   W::kMaxQ                largest unsigned quant (Q4_1 15, Q5_0 31)
//   W::unpack(b, c, lo, hi) chunk c's quants
//   W::Scales, W::scales(b) and W::apply(scales, x, sum, acc): acc += the block's term for one
//                           token, from its exact integer sums Σ q_w·q_x
// AVX2 adds the int16 pair sums (vpmaddubsw) of as many chunks as fit in int16 before one
// vpmaddwd widens them; VNNI's vpdpbusd accumulates in int32.
template <class W>
struct LaneGroupDot {
    using WBlock = typename W::WBlock;
    using XBlock = typename W::XBlock;
    static constexpr int kChunks = WBlock::kChunks;
    // Chunks per int16 sum: each int16 lane of a chunk's pair sums is 4 products <= kMaxQ * 127.
    static constexpr int kChunksPerSum = 32767 / (4 * W::kMaxQ * 127);
    static_assert(kChunksPerSum >= 1 && kChunks % kChunksPerSum == 0);
    struct Prep {
        __m256i lo[kChunks], hi[kChunks];
        typename W::Scales scales;
    };
    struct Acc {
        __m256 v;  // row order
    };
    static Prep prep(const WBlock& b) {
        Prep p;
        for (int c = 0; c < kChunks; ++c) W::unpack(b, c, p.lo[c], p.hi[c]);
        p.scales = W::scales(b);
        return p;
    }
    // Activation bytes [at, at + 4) in every lane.
    static __m256i x4(const XBlock& x, int at) { return _mm256_set1_epi32(bytes4(x.qs + at)); }
    static __m256i block_sums(const Prep& p, const XBlock& x) {
#if FLUORO_DOT_VNNI
        __m256i s = _mm256_setzero_si256();
        for (int c = 0; c < kChunks; ++c) {
            s = _mm256_dpbusd_epi32(s, p.lo[c], x4(x, 4 * c));
            s = _mm256_dpbusd_epi32(s, p.hi[c], x4(x, 16 + 4 * c));
        }
        return s;
#else
        __m256i part[kChunks];
        for (int c = 0; c < kChunks; ++c)
            part[c] = pair_sums(p.lo[c], x4(x, 4 * c), p.hi[c], x4(x, 16 + 4 * c));
        // pairwise, not a chain, so that one token's adds overlap
        if constexpr (kChunksPerSum >= 4) {
            const __m256i s = _mm256_add_epi16(_mm256_add_epi16(part[0], part[1]),
                                               _mm256_add_epi16(part[2], part[3]));
            return _mm256_madd_epi16(s, _mm256_set1_epi16(1));
        } else {
            static_assert(kChunksPerSum == 2);
            const __m256i ones = _mm256_set1_epi16(1);
            return _mm256_add_epi32(_mm256_madd_epi16(_mm256_add_epi16(part[0], part[1]), ones),
                                    _mm256_madd_epi16(_mm256_add_epi16(part[2], part[3]), ones));
        }
#endif
    }
    static void accumulate(const Prep& p, const XBlock& x, Acc& acc) {
        W::apply(p.scales, x, block_sums(p, x), acc.v);
    }
    static void finish(const Acc& acc, float* out, size_t row_stride) {
        alignas(32) float v[kGroupRows];
        _mm256_store_ps(v, acc.v);
        for (int r = 0; r < kGroupRows; ++r) out[r * row_stride] = v[r];
    }
};

// Low nibbles (elements 4c..4c+3 of each row) and high nibbles (16+4c..16+4c+3) of chunk qs.
inline void unpack_nibbles(const uint8_t* qs, __m256i& lo, __m256i& hi) {
    const __m256i mask = _mm256_set1_epi8(0x0F);
    const __m256i q = load256(qs);
    lo = _mm256_and_si256(q, mask);
    hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), mask);
}

#if FLUORO_DOT_VNNI
// Group a's eight lanes, then group b's, in one 512-bit register. GCC 12's unmasked insert,
// zero-extend and int-to-float intrinsics pass an undefined register (and warn about it); the
// masked forms with every lane selected compile to the same instructions.
inline __m512 join(__m256 a, __m256 b) {
    const __m512 wide = _mm512_castps256_ps512(a);
    return _mm512_mask_insertf32x8(wide, 0xFFFF, wide, b, 1);
}
inline __m512i join(__m256i a, __m256i b) {
    const __m512i wide = _mm512_castsi256_si512(a);
    return _mm512_mask_inserti64x4(wide, 0xFF, wide, b, 1);
}
inline __m512 to_float(__m512i v) {
    return _mm512_maskz_cvtepi32_ps(0xFFFF, v);
}
#endif

// Q4_1 against Q8_1: v += (d_r · d_x) · Σ q_w·q_x + m_r · s_x.
struct Q4_1x8Block {
    using WBlock = BlockQ4_1x8;
    using XBlock = BlockQ8_1Wide;
    static constexpr int kMaxQ = 15;
    struct Scales {
        __m256 d, m;
    };
    static void unpack(const WBlock& b, int c, __m256i& lo, __m256i& hi) {
        unpack_nibbles(b.qs[c], lo, hi);
    }
    static Scales scales(const WBlock& b) {
        return {_mm256_cvtph_ps(load128(b.d)), _mm256_cvtph_ps(load128(b.m))};
    }
    static void apply(const Scales& s, const XBlock& x, __m256i sum, __m256& v) {
        const __m256 d = _mm256_mul_ps(s.d, _mm256_broadcast_ss(&x.d));
        v = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sum), v);
        v = _mm256_fmadd_ps(s.m, _mm256_broadcast_ss(&x.s), v);
    }
#if FLUORO_DOT_VNNI
    struct Scales16 {
        __m512 d, m;
    };
    // Sixteen fp16 values, a's eight then b's, converted in one instruction.
    static __m512 widen16(const uint16_t* a, const uint16_t* b) {
        const __m256i h =
            _mm256_inserti128_si256(_mm256_castsi128_si256(load128(a)), load128(b), 1);
        return _mm512_maskz_cvtph_ps(0xFFFF, h);
    }
    static Scales16 scales16(const WBlock& a, const WBlock& b) {
        return {widen16(a.d, b.d), widen16(a.m, b.m)};
    }
    // Chunk c of both groups: the nibbles unpacked once in 512 bits.
    static void unpack16(const WBlock& a, const WBlock& b, int c, __m512i& lo, __m512i& hi) {
        const __m512i mask = _mm512_set1_epi8(0x0F);
        const __m512i q = join(load256(a.qs[c]), load256(b.qs[c]));
        lo = _mm512_and_si512(q, mask);
        hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), mask);
    }
    static void apply16(const Scales16& s, const XBlock& x, __m512i sum, __m512& v) {
        const __m512 d = _mm512_mul_ps(s.d, _mm512_set1_ps(x.d));
        v = _mm512_fmadd_ps(d, to_float(sum), v);
        v = _mm512_fmadd_ps(s.m, _mm512_set1_ps(x.s), v);
    }
#endif
};

// Q5_0 against Q8_0: the unsigned quants q = w + 16, so Σ w·x = Σ q·x - 16 · Σ x, exactly in
// int32 (x.sum16), and v += (d_r · d_x) · Σ w·x.
struct Q5_0x8Block {
    using WBlock = BlockQ5_0x8;
    using XBlock = BlockQ8_0Wide;
    static constexpr int kMaxQ = 31;
    using Scales = __m256;
    static void unpack(const WBlock& b, int c, __m256i& lo, __m256i& hi) {
        unpack_nibbles(b.qs[c], lo, hi);
        // Row r's qh byte into each byte of lane r (vpshufb stays within 128-bit halves: rows
        // 0..3 read bytes 0..3 of the low copy, rows 4..7 bytes 4..7 of the high one).
        uint64_t bits;
        std::memcpy(&bits, b.qh[c], sizeof(bits));
        const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4,
                                                4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7);
        const __m256i qh =
            _mm256_shuffle_epi8(_mm256_set1_epi64x(static_cast<int64_t>(bits)), spread);
        // byte j of a lane: bit j for lo, bit 4 + j for hi; set -> 0xFF -> 16
        const __m256i bit_lo = _mm256_set1_epi32(0x08040201);
        const __m256i bit_hi = _mm256_set1_epi32(static_cast<int32_t>(0x80402010));
        const __m256i sixteen = _mm256_set1_epi8(16);
        const auto fifth = [&](__m256i bit) {
            return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, bit), bit), sixteen);
        };
        lo = _mm256_or_si256(lo, fifth(bit_lo));
        hi = _mm256_or_si256(hi, fifth(bit_hi));
    }
    static Scales scales(const WBlock& b) { return _mm256_cvtph_ps(load128(b.d)); }
    static void apply(const Scales& d_w, const XBlock& x, __m256i sum, __m256& v) {
        const __m256i w_sum = _mm256_sub_epi32(sum, _mm256_set1_epi32(x.sum16));
        const __m256 d = _mm256_mul_ps(d_w, _mm256_broadcast_ss(&x.d));
        v = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(w_sum), v);
    }
#if FLUORO_DOT_VNNI
    using Scales16 = __m512;
    static Scales16 scales16(const WBlock& a, const WBlock& b) {
        return join(scales(a), scales(b));
    }
    static void apply16(const Scales16& d_w, const XBlock& x, __m512i sum, __m512& v) {
        const __m512i w_sum = _mm512_sub_epi32(sum, _mm512_set1_epi32(x.sum16));
        const __m512 d = _mm512_mul_ps(d_w, _mm512_set1_ps(x.d));
        v = _mm512_fmadd_ps(d, to_float(w_sum), v);
    }
#endif
};

using Q4_1x8Simd = LaneGroupDot<Q4_1x8Block>;
using Q5_0x8Simd = LaneGroupDot<Q5_0x8Block>;

#if FLUORO_DOT_VNNI
// ---- Q4_1 and Q5_0, two groups at once (AVX-512 VNNI) ----

// Two adjacent groups' sixteen rows, one per 32-bit lane of a 512-bit register (lanes 0..7 the
// first group's, 8..15 the second's): one vpdpbusd is 512 products where LaneGroupDot's is 256,
// and 512-bit vpdpbusd issues on two ports, about twice the products per cycle of the 256-bit
// form on the CPUs that have it. Each row still gets exactly LaneGroupDot's operations (exact
// integer block sums, then the same float multiply and FMAs in the same order), so its result
// has the same bits whichever kernel computes it.
template <class W>
struct LaneGroupPairDot {
    using WBlock = typename W::WBlock;
    using XBlock = typename W::XBlock;
    static constexpr int kChunks = WBlock::kChunks;
    static_assert(kChunks == 4);
    struct Prep {
        __m512i lo[kChunks], hi[kChunks];
        typename W::Scales16 scales;
    };
    struct Acc {
        __m512 v;  // row order, both groups
    };
    static Prep prep(const WBlock& a, const WBlock& b) {
        Prep p;
        for (int c = 0; c < kChunks; ++c) {
            if constexpr (requires { W::unpack16(a, b, c, p.lo[c], p.hi[c]); }) {
                W::unpack16(a, b, c, p.lo[c], p.hi[c]);
            } else {
                __m256i a_lo, a_hi, b_lo, b_hi;
                W::unpack(a, c, a_lo, a_hi);
                W::unpack(b, c, b_lo, b_hi);
                p.lo[c] = join(a_lo, b_lo);
                p.hi[c] = join(a_hi, b_hi);
            }
        }
        p.scales = W::scales16(a, b);
        return p;
    }
    // Activation bytes [at, at + 4) in every lane.
    static __m512i x4(const XBlock& x, int at) { return _mm512_set1_epi32(bytes4(x.qs + at)); }
    // Two chains of four, so that vpdpbusd's latency overlaps within a token.
    static __m512i block_sums(const Prep& p, const XBlock& x) {
        const __m512i zero = _mm512_setzero_si512();
        __m512i s0 = _mm512_dpbusd_epi32(zero, p.lo[0], x4(x, 0));
        __m512i s1 = _mm512_dpbusd_epi32(zero, p.lo[1], x4(x, 4));
        s0 = _mm512_dpbusd_epi32(s0, p.lo[2], x4(x, 8));
        s1 = _mm512_dpbusd_epi32(s1, p.lo[3], x4(x, 12));
        s0 = _mm512_dpbusd_epi32(s0, p.hi[0], x4(x, 16));
        s1 = _mm512_dpbusd_epi32(s1, p.hi[1], x4(x, 20));
        s0 = _mm512_dpbusd_epi32(s0, p.hi[2], x4(x, 24));
        s1 = _mm512_dpbusd_epi32(s1, p.hi[3], x4(x, 28));
        return _mm512_add_epi32(s0, s1);
    }
    static void accumulate(const Prep& p, const XBlock& x, Acc& acc) {
        W::apply16(p.scales, x, block_sums(p, x), acc.v);
    }
    static void finish(const Acc& acc, float* out, size_t row_stride) {
        alignas(64) float v[2 * kGroupRows];
        _mm512_store_ps(v, acc.v);
        for (int r = 0; r < 2 * kGroupRows; ++r) out[r * row_stride] = v[r];
    }
};

using Q4_1x16Simd = LaneGroupPairDot<Q4_1x8Block>;
using Q5_0x16Simd = LaneGroupPairDot<Q5_0x8Block>;
#endif

// ---- Q8_0: two halves of four rows ----

// Row r's first lane in the [r0 r0 r2 r2 | r1 r1 r3 r3] layout of the folded sums.
inline constexpr int kGroupLane[kHalfRows] = {0, 4, 2, 6};

// The four rows' scales (converted, in row order) in the folded sums' layout.
inline __m256 group_scales(__m256 converted) {
    return _mm256_permutevar8x32_ps(converted, _mm256_setr_epi32(0, 0, 2, 2, 1, 1, 3, 3));
}

// Σ of 8 products per int32 lane, unsigned a <= 128 (Q8_0's |w|, -128 included) times signed b:
// lane j of each half is a_lo[4j..4j+3]·b_lo + a_hi[4j..4j+3]·b_hi. One maddubs pair is at most
// 2 * 128 * 127 = 32512; two would overflow int16, so each widens on its own.
inline __m256i sum_halves(__m256i a_lo, __m256i b_lo, __m256i a_hi, __m256i b_hi) {
#if FLUORO_DOT_VNNI
    return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), a_lo, b_lo), a_hi, b_hi);
#else
    const __m256i ones = _mm256_set1_epi16(1);
    return _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(a_lo, b_lo), ones),
                            _mm256_madd_epi16(_mm256_maddubs_epi16(a_hi, b_hi), ones));
#endif
}

// The four rows' sums folded into [r0 r0 r2 r2 | r1 r1 r3 r3] (int32), each lane 16 products:
// rows 0|1 (a01 against b01) and 2|3 (a23 against b23), elements 0..15 (lo) and 16..31 (hi).
inline __m256i fold_group(__m256i a01_lo, __m256i b01_lo, __m256i a01_hi, __m256i b01_hi,
                          __m256i a23_lo, __m256i b23_lo, __m256i a23_hi, __m256i b23_hi) {
    return _mm256_hadd_epi32(sum_halves(a01_lo, b01_lo, a01_hi, b01_hi),
                             sum_halves(a23_lo, b23_lo, a23_hi, b23_hi));
}

// Four rows' signed quants against Q8_0 activations, by ggml's sign trick: |w| (unsigned) times
// x carrying w's sign.
struct Q8_0x4Simd {
    using WBlock = BlockQ8_0x4;
    using XBlock = BlockQ8_0Wide;
    struct Prep {
        __m256i abs[4];  // |w| of lo01, hi01, lo23, hi23
        __m256i w[4];    // w
        __m256 d;        // folded layout
    };
    struct Acc {
        __m256 v;
    };
    static Prep prep(const WBlock& b) {
        Prep p;
        for (int i = 0; i < 4; ++i) {
            p.w[i] = load256(b.qs + i * kQK);  // BlockQ8_0x4's chunk order
            p.abs[i] = _mm256_sign_epi8(p.w[i], p.w[i]);
        }
        p.d = group_scales(_mm256_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.d))));
        return p;
    }
    static void accumulate(const Prep& p, const XBlock& x, Acc& acc) {
        const __m256i x_lo = _mm256_broadcastsi128_si256(load128(x.qs));
        const __m256i x_hi = _mm256_broadcastsi128_si256(load128(x.qs + 16));
        const __m256i sum = fold_group(
            p.abs[0], _mm256_sign_epi8(x_lo, p.w[0]), p.abs[1], _mm256_sign_epi8(x_hi, p.w[1]),
            p.abs[2], _mm256_sign_epi8(x_lo, p.w[2]), p.abs[3], _mm256_sign_epi8(x_hi, p.w[3]));
        acc.v = _mm256_fmadd_ps(_mm256_mul_ps(p.d, _mm256_broadcast_ss(&x.d)),
                                _mm256_cvtepi32_ps(sum), acc.v);
    }
    static void finish(const Acc& acc, float* out, size_t row_stride) {
        alignas(32) float v[8];
        _mm256_store_ps(v, acc.v);
        for (int r = 0; r < kHalfRows; ++r) {
            const int l = kGroupLane[r];
            out[r * row_stride] = v[l] + v[l + 1];
        }
    }
};

#if FLUORO_DOT_VNNI
// A BlockQ8_0x8's eight rows in 512-bit registers (AVX-512 VNNI): lanes 2r and 2r + 1 hold row
// r's two partial sums A (elements 0..7 and 16..23) and B (8..15 and 24..31), the same two the
// AVX2 fold gives a row; register k holds A's k-th four quants and B's, against the activation's
// matching 8 bytes (BlockQ8_0Wide::qs_ab) broadcast to every lane pair. AVX-512 has no vpsignb,
// so the quants are made unsigned instead of ggml's sign trick, u = w + 128 (w ^ 0x80):
// Σ u·x = Σ w·x + 128 · Σ x, and each lane starts at offset_ab. The float steps per lane are
// the AVX2 kernel's, so each row's result has Q8_0x4Simd's bits.
struct Q8_0x8Vnni512 {
    using WBlock = BlockQ8_0x8;
    using XBlock = BlockQ8_0Wide;
    struct Prep {
        __m512i w[4];
        __m512 d;  // row r's scale in lanes 2r and 2r + 1
    };
    struct Acc {
        __m512 v;
    };
    static Prep prep(const WBlock& b) {
        const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
        // u[i]: chunk i of both halves, rows [0 | 1 | 4 | 5] (i = 0, 1) or [2 | 3 | 6 | 7]
        // (i = 2, 3) one per 128-bit lane, elements 0..15 (i even) or 16..31, dword j of a lane
        // its elements 4j..4j+3 of the 16.
        __m512i u[4];
        for (int i = 0; i < 4; ++i)
            u[i] = _mm512_xor_si512(
                join(load256(b.half[0].qs + i * kQK), load256(b.half[1].qs + i * kQK)), flip);
        // Lane pair r: row r's dword j (A) and j + 2 (B), rows 0 1 4 5 from the first source.
        const __m512i pick =
            _mm512_setr_epi32(0, 2, 4, 6, 16, 18, 20, 22, 8, 10, 12, 14, 24, 26, 28, 30);
        const __m512i next = _mm512_add_epi32(pick, _mm512_set1_epi32(1));
        Prep p;
        p.w[0] = _mm512_permutex2var_epi32(u[0], pick, u[2]);  // elements 0..3 | 8..11
        p.w[1] = _mm512_permutex2var_epi32(u[0], next, u[2]);  // 4..7 | 12..15
        p.w[2] = _mm512_permutex2var_epi32(u[1], pick, u[3]);  // 16..19 | 24..27
        p.w[3] = _mm512_permutex2var_epi32(u[1], next, u[3]);  // 20..23 | 28..31
        const __m128i d16 =
            _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.half[0].d)),
                               _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.half[1].d)));
        const __m512 d = _mm512_castps256_ps512(_mm256_cvtph_ps(d16));  // rows 0..7
        p.d = _mm512_maskz_permutexvar_ps(
            0xFFFF, _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7), d);
        return p;
    }
    static __m512i x8(const void* at) {
        int64_t v;
        std::memcpy(&v, at, sizeof(v));
        return _mm512_set1_epi64(v);
    }
    static void accumulate(const Prep& p, const XBlock& x, Acc& acc) {
        __m512i s = x8(x.offset_ab);
        for (int k = 0; k < 4; ++k) s = _mm512_dpbusd_epi32(s, p.w[k], x8(x.qs_ab + 8 * k));
        acc.v = _mm512_fmadd_ps(_mm512_mul_ps(p.d, _mm512_set1_ps(x.d)), to_float(s), acc.v);
    }
    static void finish(const Acc& acc, float* out, size_t row_stride) {
        alignas(64) float v[16];
        _mm512_store_ps(v, acc.v);
        for (int r = 0; r < kGroupRows; ++r) out[r * row_stride] = v[2 * r] + v[2 * r + 1];
    }
};
#endif

// One half (rows 4H..4H+3) of a BlockQ8_0x8.
template <int H>
struct Q8_0HalfSimd : Q8_0x4Simd {
    using WBlock = BlockQ8_0x8;
    static Prep prep(const WBlock& b) { return Q8_0x4Simd::prep(b.half[H]); }
};

// ---- the group loop ----

template <class K, int NX>
void group_tile(const typename K::WBlock* w, const std::byte* x, size_t x_stride, int64_t n_blocks,
                float* out) {
    typename K::Acc acc[NX];
    accumulate_tile<K, NX>(w, x, x_stride, n_blocks, acc);
    for (int t = 0; t < NX; ++t) K::finish(acc[t], out + t, kMaxDotRows);
}

// Tiles of up to kTile tokens: 4 keeps a block's prep and the tile's accumulators (mostly) in
// AVX2's 16 registers; the AVX-512 kernels fit 8 in its 32.
template <class K, int kTile = 4>
void group_dot(const void* w_group, const void* x, size_t x_stride, int n_x, int64_t n,
               float* out) {
    const auto* w = static_cast<const typename K::WBlock*>(w_group);
    const auto* xb = static_cast<const std::byte*>(x);
    const int64_t nb = n / kQK;
    for_tiles<kTile>(n_x, [&](auto nx, int t0) {
        group_tile<K, decltype(nx)::value>(w, xb + size_t(t0) * x_stride, x_stride, nb, out + t0);
    });
}

// Q8_0: two passes over the group, one per half, the four-row kernel's registers holding one.
inline void q8_0_halves_dot(const void* w_group, const void* x, size_t x_stride, int n_x, int64_t n,
                            float* out) {
    group_dot<Q8_0HalfSimd<0>>(w_group, x, x_stride, n_x, n, out);
    group_dot<Q8_0HalfSimd<1>>(w_group, x, x_stride, n_x, n, out + kHalfRows * kMaxDotRows);
}

#if FLUORO_DOT_VNNI
// NX tokens against two adjacent groups (w, then w + n_blocks).
template <class K, int NX>
void group_pair_tile(const typename K::WBlock* w, const std::byte* x, size_t x_stride,
                     int64_t n_blocks, float* out) {
    using XBlock = typename K::XBlock;
    const typename K::WBlock* w2 = w + n_blocks;
    const XBlock* xs[NX];
    typename K::Acc acc[NX];
    for (int t = 0; t < NX; ++t) {
        xs[t] = reinterpret_cast<const XBlock*>(x + size_t(t) * x_stride);
        acc[t].v = _mm512_setzero_ps();
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
        prefetch_ahead(w + b);
        prefetch_ahead(w2 + b);
        const typename K::Prep p = K::prep(w[b], w2[b]);
        for (int t = 0; t < NX; ++t) K::accumulate(p, xs[t][b], acc[t]);
    }
    for (int t = 0; t < NX; ++t) K::finish(acc[t], out + t, kMaxDotRows);
}

// Two adjacent groups (2 · kGroupRows rows): out[r * kMaxDotRows + t] for r < 16. Tiles of up to
// eight tokens: the prep (8 registers + 2 scales) and eight accumulators leave AVX-512's 32
// registers room for the activations.
template <class K>
void group_pair_dot(const void* w_group, const void* x, size_t x_stride, int n_x, int64_t n,
                    float* out) {
    const auto* w = static_cast<const typename K::WBlock*>(w_group);
    const auto* xb = static_cast<const std::byte*>(x);
    const int64_t nb = n / kQK;
    for_tiles<8>(n_x, [&](auto nx, int t0) {
        group_pair_tile<K, decltype(nx)::value>(w, xb + size_t(t0) * x_stride, x_stride, nb,
                                                out + t0);
    });
}

inline void set_x86_group_pair_kernels(GroupDotTable& table) {
    table[static_cast<size_t>(GgmlType::Q4_1)] = &group_pair_dot<Q4_1x16Simd>;
    table[static_cast<size_t>(GgmlType::Q5_0)] = &group_pair_dot<Q5_0x16Simd>;
}
#endif

#if FLUORO_DOT_VNNI
// One token (decode) keeps the four-row halves: Gemma 3's 178 MB head, which decode streams from
// memory, measured ~15 % slower per token with the 512-bit kernel (fluoro bench tg128, three
// alternations, 2026-12-02) though the kernel benchmark alone shows them equal. Several tokens
// (prefill, speculative verification) take the 512-bit kernel; the bits are the same either way.
inline void q8_0_vnni_dot(const void* w_group, const void* x, size_t x_stride, int n_x, int64_t n,
                          float* out) {
    if (n_x == 1) return q8_0_halves_dot(w_group, x, x_stride, n_x, n, out);
    group_dot<Q8_0x8Vnni512, 8>(w_group, x, x_stride, n_x, n, out);
}
#endif

inline void set_x86_group_kernels(GroupDotTable& table) {
    table[static_cast<size_t>(GgmlType::Q4_1)] = &group_dot<Q4_1x8Simd>;
    table[static_cast<size_t>(GgmlType::Q5_0)] = &group_dot<Q5_0x8Simd>;
    table[static_cast<size_t>(GgmlType::Q8_0)] = &q8_0_halves_dot;
#if FLUORO_DOT_VNNI
    table[static_cast<size_t>(GgmlType::Q8_0)] = &q8_0_vnni_dot;
#endif
}

}  // namespace x86
}  // namespace
}  // namespace fluoro::cpu::detail
