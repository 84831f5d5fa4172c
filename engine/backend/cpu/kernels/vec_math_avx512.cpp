// The VecMath kernels for CPUs with AVX-512 F/BW/VL/DQ: 16 float lanes, exp scaled by vscalefps
// (which also handles underflow). Headers with external-linkage code come before the target
// switch (see dot_avx2.cpp).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include <immintrin.h>

#include "backend/cpu/kernels/vec_math.h"
#include "backend/cpu/kernels/vec_math_table.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FLUORO_VEC_AVX512 1
#endif

#if FLUORO_VEC_AVX512
#if defined(__clang__)
#pragma clang attribute push(                                                    \
    __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq"))), \
    apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq")
// GCC 12's avx512fintrin.h starts reductions and conversions from a self-initialized
// _mm512_undefined_*() value, which -Wuninitialized reports; the value is never read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "backend/cpu/kernels/vec_math_impl.h"

namespace fluoro::cpu::detail {
namespace {

struct Avx512 {
    using T = __m512;
    static constexpr int W = 16;
    static constexpr int kRegisters = 32;  // zmm0-31
    static T zero() { return _mm512_setzero_ps(); }
    static T set1(float x) { return _mm512_set1_ps(x); }
    static T load(const float* p) { return _mm512_loadu_ps(p); }
    static T load(const uint16_t* p) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    // W int8 values, and W 4-bit values (the low or the high nibbles of W bytes), as floats.
    static T load_i8(const int8_t* p) {
        return _mm512_cvtepi32_ps(
            _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    }
    static T load_nibbles(const uint8_t* p, bool high) {
        __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        if (high) b = _mm_srli_epi16(b, 4);
        return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_and_si128(b, _mm_set1_epi8(0x0F))));
    }
    static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
    static void store_f16(uint16_t* p, T v) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                            _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    static T add(T a, T b) { return _mm512_add_ps(a, b); }
    static T sub(T a, T b) { return _mm512_sub_ps(a, b); }
    static T mul(T a, T b) { return _mm512_mul_ps(a, b); }
    static T div(T a, T b) { return _mm512_div_ps(a, b); }
    static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
    static T max(T a, T b) { return _mm512_max_ps(a, b); }
    // How many lanes have a < b.
    static int count_less(T a, T b) {
        return __builtin_popcount(unsigned(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)));
    }
    static float reduce_add(T v) { return _mm512_reduce_add_ps(v); }
    static float reduce_max(T v) { return _mm512_reduce_max_ps(v); }
    // Four horizontal sums: fold each vector to 8 lanes (a|b and c|d side by side), then to one
    // 128-bit block per vector, then hadd within the blocks.
    static void reduce4(T a, T b, T c, T d, float* out) {
        const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44),   // a0 a1 b0 b1
                                        _mm512_shuffle_f32x4(a, b, 0xEE));  // + a2 a3 b2 b3
        const __m512 cd =
            _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
        const __m512 abcd = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88),  // a b c d
                                          _mm512_shuffle_f32x4(ab, cd, 0xDD));
        const __m256 lo = _mm512_castps512_ps256(abcd), hi = _mm512_extractf32x8_ps(abcd, 1);
        const __m256 h = _mm256_hadd_ps(lo, hi);  // a a c c | b b d d (pair sums)
        const __m256 h2 = _mm256_hadd_ps(h, h);   // a c a c | b d b d
        const __m128 x = _mm256_castps256_ps128(h2), y = _mm256_extractf128_ps(h2, 1);
        out[0] = _mm_cvtss_f32(x);
        out[1] = _mm_cvtss_f32(y);
        out[2] = _mm_cvtss_f32(_mm_movehdup_ps(x));
        out[3] = _mm_cvtss_f32(_mm_movehdup_ps(y));
    }
    static T exp(T x) {
        x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(88.0f));
        const T n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        T r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
        r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187045e-06f), r);
        T p = _mm512_set1_ps(1.0f / 720);
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
        return _mm512_scalef_ps(p, n);  // p * 2^n, 0 below the smallest subnormal
    }
    static float f16(uint16_t h) { return _cvtsh_ss(h); }
    static uint16_t to_f16(float x) {  // not _cvtss_sh: a C99 compound literal in clang
        return static_cast<uint16_t>(
            _mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(x), _MM_FROUND_TO_NEAREST_INT), 0));
    }
    static float exp1(float x) { return _mm512_cvtss_f32(exp(_mm512_set1_ps(x))); }
    static double sum_squares_f64(const float* x, int64_t n) {
        __m512d acc0 = _mm512_setzero_pd(), acc1 = _mm512_setzero_pd();
        int64_t i = 0;
        for (; i + 16 <= n; i += 16) {
            const __m512 v = _mm512_loadu_ps(x + i);
            const __m512d a = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
            const __m512d b =
                _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
            acc0 = _mm512_fmadd_pd(a, a, acc0);
            acc1 = _mm512_fmadd_pd(b, b, acc1);
        }
        double sum = _mm512_reduce_add_pd(_mm512_add_pd(acc0, acc1));
        for (; i < n; ++i) sum += double(x[i]) * double(x[i]);
        return sum;
    }
};

}  // namespace

VecMath make_avx512_vec_math() {
    return VecMathImpl<Avx512>::table();
}

}  // namespace fluoro::cpu::detail

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
#endif  // FLUORO_VEC_AVX512

namespace fluoro::cpu::detail {

const VecMath& avx512_vec_math() {
#if FLUORO_VEC_AVX512
    static const VecMath table = make_avx512_vec_math();
    return table;
#else
    return avx2_vec_math();
#endif
}

}  // namespace fluoro::cpu::detail
