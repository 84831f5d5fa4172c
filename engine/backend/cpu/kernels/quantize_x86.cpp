// AVX2 converters from float32 activations to Q8_0, Q8_1 and Q8_K (kernels/quantize_partner.h),
// equal byte for byte to the reference quantizers in engine/tensor/quantize_blocks.cpp:
//  - max |x| is exact in any order (no NaN: such blocks take the reference path);
//  - d, 1/d and the fp16 scales are the same scalar float operations;
//  - x·(1/d) is one IEEE multiply either way, and the rounding is done exactly: roundf (halves
//    away from zero) as trunc(v) plus ±1 where |v − trunc(v)| >= 0.5 (the difference is exact),
//    Q8_K's nearest-even as cvtps2dq in the default rounding mode;
//  - the int32 -> int8 packing saturates to [-128, 127] like the reference's clamp (and values
//    never leave [-127, 127] for finite blocks anyway).
// As in dot_avx2.cpp, headers with external-linkage code come before the target switch.
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <immintrin.h>

#include "backend/cpu/kernels/interleave.h"
#include "backend/cpu/kernels/quantize_partner.h"
#include "tensor/block_kernels.h"
#include "tensor/blocks.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FLUORO_QUANTIZE_X86 1
#endif

#if FLUORO_QUANTIZE_X86
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

namespace fluoro::cpu::detail {
namespace {

inline __m256 abs_ps(__m256 v) {
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}

inline float hmax(__m256 v) {
    __m128 r = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_max_ps(r, _mm_movehl_ps(r, r));
    r = _mm_max_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

// Whether any of n/8 vectors holds inf or NaN: |x| not below +inf (unordered counts as true).
inline bool any_not_finite(const __m256* v, int count) {
    __m256 bad = _mm256_setzero_ps();
    for (int i = 0; i < count; ++i)
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(abs_ps(v[i]), _mm256_set1_ps(INFINITY), _CMP_NLT_UQ));
    return _mm256_movemask_ps(bad) != 0;
}

// roundf(v) (halves away from zero) as int32, exactly.
inline __m256i round_away(__m256 v) {
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = abs_ps(_mm256_sub_ps(v, t));
    const __m256 one = _mm256_or_ps(_mm256_and_ps(v, _mm256_set1_ps(-0.0f)), _mm256_set1_ps(1.0f));
    const __m256 step = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), one);
    return _mm256_cvttps_epi32(_mm256_add_ps(t, step));
}

// 32 int32 (4 vectors, in order) -> 32 int8 in order, saturating.
inline __m256i pack_32(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i ab = _mm256_packs_epi32(a, b);  // a0-3 b0-3 | a4-7 b4-7
    const __m256i cd = _mm256_packs_epi32(c, d);
    const __m256i bytes = _mm256_packs_epi16(ab, cd);  // a0-3 b0-3 c0-3 d0-3 | a4-7 ...
    return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Sum of 32 int8.
inline int sum_i8(__m256i q) {
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(1), q);
    const __m256i quads = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(quads), _mm256_extracti128_si256(quads, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

// The shared part of Q8_0 and Q8_1: false when the block must take the reference path.
inline bool quantize_legacy(const float* x, float& d_out, __m256i& q_out) {
    __m256 v[4];
    for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(x + 8 * i);
    if (any_not_finite(v, 4)) return false;
    const __m256 m = _mm256_max_ps(_mm256_max_ps(abs_ps(v[0]), abs_ps(v[1])),
                                   _mm256_max_ps(abs_ps(v[2]), abs_ps(v[3])));
    const float d = hmax(m) / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    if (!(id <= FLT_MAX)) return false;
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int i = 0; i < 4; ++i) q[i] = round_away(_mm256_mul_ps(v[i], vid));
    d_out = d;
    q_out = pack_32(q[0], q[1], q[2], q[3]);
    return true;
}

inline uint16_t to_fp16(float f) {
    const __m128i h = _mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT);
    return static_cast<uint16_t>(_mm_extract_epi16(h, 0));
}

void quantize_block_q8_0(const float* x, BlockQ8_0& out) {
    float d;
    __m256i q;
    if (!quantize_legacy(x, d, q)) return fluoro::detail::quantize_block(x, out);
    out.d = to_fp16(d);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.qs), q);
}

void quantize_block_q8_1(const float* x, BlockQ8_1& out) {
    float d;
    __m256i q;
    if (!quantize_legacy(x, d, q)) return fluoro::detail::quantize_block(x, out);
    out.d = to_fp16(d);
    out.s = to_fp16(static_cast<float>(sum_i8(q)) * d);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.qs), q);
}

void quantize_block_q8_k(const float* x, BlockQ8_K& out) {
    constexpr int kVecs = kQK_K / 8;
    __m256 v[kVecs];
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < kVecs; ++i) {
        v[i] = _mm256_loadu_ps(x + 8 * i);
        m = _mm256_max_ps(m, abs_ps(v[i]));
    }
    if (any_not_finite(v, kVecs)) return fluoro::detail::quantize_block(x, out);
    const float amax = hmax(m);
    if (amax == 0.0f) return fluoro::detail::quantize_block(x, out);
    // The first element of largest magnitude, sign kept (as the reference's scan).
    float max = 0.0f;
    const __m256 vamax = _mm256_set1_ps(amax);
    for (int i = 0; i < kVecs; ++i) {
        const int hit = _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(v[i]), vamax, _CMP_EQ_OQ));
        if (hit) {
            max = x[8 * i + __builtin_ctz(static_cast<unsigned>(hit))];
            break;
        }
    }
    const float iscale = -127.0f / max;
    if (!(std::fabs(iscale) <= FLT_MAX)) return fluoro::detail::quantize_block(x, out);
    const __m256 vscale = _mm256_set1_ps(iscale);
    const __m256i hi = _mm256_set1_epi32(127);
    __m256i group_sums[8];  // per 32 elements: 4 int32 partial sums per 16-element group
    for (int c = 0; c < kQK_K / 32; ++c) {
        __m256i q[4];
        for (int i = 0; i < 4; ++i)
            q[i] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(v[4 * c + i], vscale)), hi);
        const __m256i bytes = pack_32(q[0], q[1], q[2], q[3]);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.qs + 32 * c), bytes);
        const __m256i pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(1), bytes);
        group_sums[c] = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
    }
    // Chunk c's low 128 bits are group 2c, the high ones group 2c+1: reduce with hadds, then
    // interleave the two halves back into group order.
    const __m256i s0123 = _mm256_hadd_epi32(_mm256_hadd_epi32(group_sums[0], group_sums[1]),
                                            _mm256_hadd_epi32(group_sums[2], group_sums[3]));
    const __m256i s4567 = _mm256_hadd_epi32(_mm256_hadd_epi32(group_sums[4], group_sums[5]),
                                            _mm256_hadd_epi32(group_sums[6], group_sums[7]));
    const __m256i packed = _mm256_packs_epi32(s0123, s4567);  // g0 g2 .. g14 | g1 g3 .. g15
    const __m128i even = _mm256_castsi256_si128(packed);
    const __m128i odd = _mm256_extracti128_si256(packed, 1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out.bsums), _mm_unpacklo_epi16(even, odd));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out.bsums + 8), _mm_unpackhi_epi16(even, odd));
    out.d = 1 / iscale;
}

// The fp16 rounding of f, as float: what a narrow block's scale becomes once widened.
inline float through_fp16(float f) {
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT)));
}

// quantize_legacy's answer; when it refuses, the reference's block widened into out.
template <class Narrow, class Wide>
bool legacy_or_reference(const float* x, GgmlType weight, Wide& out, float& d, __m256i& q) {
    if (quantize_legacy(x, d, q)) return true;
    Narrow narrow;
    fluoro::detail::quantize_block(x, narrow);
    widen_partner_row(weight, &narrow, &out, kQK);
    return false;
}

// The group kernels' widened blocks (interleave.h) in one pass, equal to quantizing to the narrow
// partner block and widening it (widen_partner_row): the same quantize_legacy, the fp16 scales
// rounded and converted back by F16C instead of stored and converted in software. A block the
// SIMD path refuses (non-finite values) is quantized by the reference and widened.

void quantize_block_q8_1_wide(const float* x, BlockQ8_1Wide& out) {
    float d;
    __m256i q;
    if (!legacy_or_reference<BlockQ8_1>(x, GgmlType::Q4_1, out, d, q)) return;
    out.d = through_fp16(d);
    out.s = through_fp16(static_cast<float>(sum_i8(q)) * d);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.qs), q);
}
void quantize_block_q8_0_wide(const float* x, BlockQ8_0Wide& out) {
    float d;
    __m256i q;
    if (!legacy_or_reference<BlockQ8_0>(x, GgmlType::Q8_0, out, d, q)) return;
    out.d = through_fp16(d);
    const int32_t sum = sum_i8(q);
    out.sum16 = 16 * sum;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.qs), q);
    // A: elements 0..7 and 16..23, the first two dwords of each 128-bit half; qs_ab orders the
    // dwords of each half 0, 2, 1, 3.
    const int32_t a = sum_i8(_mm256_and_si256(q, _mm256_setr_epi64x(-1, 0, -1, 0)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.qs_ab),
                        _mm256_shuffle_epi32(q, _MM_SHUFFLE(3, 1, 2, 0)));
    out.offset_ab[0] = -128 * a;
    out.offset_ab[1] = -128 * (sum - a);
}

// kElems: the widened blocks (interleave.h) do not name their element count.
template <class Block, void (*Quantize)(const float*, Block&), int64_t kElems = Block::kElems>
void quantize_blocks(const float* x, void* dst, int64_t n_blocks) {
    auto* out = static_cast<std::byte*>(dst);
    for (int64_t b = 0; b < n_blocks; ++b) {
        Block block;
        Quantize(x + b * kElems, block);
        std::memcpy(out + b * sizeof(Block), &block, sizeof(Block));
    }
}

}  // namespace

void quantize_q8_0_avx2(const float* x, void* dst, int64_t n_blocks) {
    quantize_blocks<BlockQ8_0, quantize_block_q8_0>(x, dst, n_blocks);
}
void quantize_q8_1_avx2(const float* x, void* dst, int64_t n_blocks) {
    quantize_blocks<BlockQ8_1, quantize_block_q8_1>(x, dst, n_blocks);
}
void quantize_q8_k_avx2(const float* x, void* dst, int64_t n_blocks) {
    quantize_blocks<BlockQ8_K, quantize_block_q8_k>(x, dst, n_blocks);
}
void quantize_q8_1_wide_avx2(const float* x, void* dst, int64_t n_blocks) {
    quantize_blocks<BlockQ8_1Wide, quantize_block_q8_1_wide, kQK>(x, dst, n_blocks);
}
void quantize_q8_0_wide_avx2(const float* x, void* dst, int64_t n_blocks) {
    quantize_blocks<BlockQ8_0Wide, quantize_block_q8_0_wide, kQK>(x, dst, n_blocks);
}

}  // namespace fluoro::cpu::detail

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace fluoro::cpu::detail {
bool quantize_x86_compiled() {
    return true;
}
}  // namespace fluoro::cpu::detail

#else  // !FLUORO_QUANTIZE_X86

namespace fluoro::cpu::detail {
bool quantize_x86_compiled() {
    return false;
}
void quantize_q8_0_avx2(const float*, void*, int64_t) {}
void quantize_q8_1_avx2(const float*, void*, int64_t) {}
void quantize_q8_k_avx2(const float*, void*, int64_t) {}
void quantize_q8_1_wide_avx2(const float*, void*, int64_t) {}
void quantize_q8_0_wide_avx2(const float*, void*, int64_t) {}
}  // namespace fluoro::cpu::detail

#endif
