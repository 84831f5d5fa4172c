// The VecMath kernels for CPUs with AVX2, FMA and F16C: 8 float lanes, fp16 through vcvtph2ps /
// vcvtps2ph, exp by polynomial (vec_math_impl.h). Headers with external-linkage code come before
// the target switch (see dot_avx2.cpp).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include <immintrin.h>

#include "backend/cpu/kernels/vec_math.h"
#include "backend/cpu/kernels/vec_math_table.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FLUORO_VEC_AVX2 1
#endif

#if FLUORO_VEC_AVX2
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

#include "backend/cpu/kernels/vec_math_impl.h"

namespace fluoro::cpu::detail {
namespace {

struct Avx2 {
    using T = __m256;
    static constexpr int W = 8;
    static constexpr int kRegisters = 16;  // ymm0-15
    static T zero() { return _mm256_setzero_ps(); }
    static T set1(float x) { return _mm256_set1_ps(x); }
    static T load(const float* p) { return _mm256_loadu_ps(p); }
    static T load(const uint16_t* p) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    // W int8 values, and W 4-bit values (the low or the high nibbles of W bytes), as floats.
    static T load_i8(const int8_t* p) {
        return _mm256_cvtepi32_ps(
            _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
    }
    static T load_nibbles(const uint8_t* p, bool high) {
        __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
        if (high) b = _mm_srli_epi16(b, 4);
        return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_and_si128(b, _mm_set1_epi8(0x0F))));
    }
    static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
    static void store_f16(uint16_t* p, T v) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                         _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    static T add(T a, T b) { return _mm256_add_ps(a, b); }
    static T sub(T a, T b) { return _mm256_sub_ps(a, b); }
    static T mul(T a, T b) { return _mm256_mul_ps(a, b); }
    static T div(T a, T b) { return _mm256_div_ps(a, b); }
    static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
    static T max(T a, T b) { return _mm256_max_ps(a, b); }
    // How many lanes have a < b.
    static int count_less(T a, T b) {
        return __builtin_popcount(unsigned(_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_LT_OQ))));
    }
    static float reduce_add(T v) {
        __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        r = _mm_add_ps(r, _mm_movehl_ps(r, r));
        r = _mm_add_ss(r, _mm_movehdup_ps(r));
        return _mm_cvtss_f32(r);
    }
    // Four horizontal sums: hadd pairs the vectors, then the two 128-bit halves are added.
    static void reduce4(T a, T b, T c, T d, float* out) {
        const __m256 ab = _mm256_hadd_ps(a, b), cd = _mm256_hadd_ps(c, d);
        const __m256 abcd = _mm256_hadd_ps(ab, cd);  // per half: a, b, c, d partial sums
        _mm_storeu_ps(out,
                      _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
    }
    static float reduce_max(T v) {
        __m128 r = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        r = _mm_max_ps(r, _mm_movehl_ps(r, r));
        r = _mm_max_ss(r, _mm_movehdup_ps(r));
        return _mm_cvtss_f32(r);
    }
    static T exp(T x) {
        const T lo = _mm256_set1_ps(-87.33654f);
        const __m256 underflow = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
        x = _mm256_min_ps(_mm256_max_ps(x, lo), _mm256_set1_ps(88.0f));
        const T n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        T r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
        r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187045e-06f), r);
        T p = _mm256_set1_ps(1.0f / 720);
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
        const __m256i e =
            _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
        return _mm256_andnot_ps(underflow, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
    }
    static float f16(uint16_t h) { return _cvtsh_ss(h); }
    static uint16_t to_f16(float x) {  // not _cvtss_sh: a C99 compound literal in clang
        return static_cast<uint16_t>(
            _mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(x), _MM_FROUND_TO_NEAREST_INT), 0));
    }
    static float exp1(float x) {
        alignas(32) float v[8] = {x};
        _mm256_store_ps(v, exp(_mm256_load_ps(v)));
        return v[0];
    }
    static double sum_squares_f64(const float* x, int64_t n) {
        __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
        int64_t i = 0;
        for (; i + 8 <= n; i += 8) {
            const __m256 v = _mm256_loadu_ps(x + i);
            const __m256d a = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
            const __m256d b = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
            acc0 = _mm256_fmadd_pd(a, a, acc0);
            acc1 = _mm256_fmadd_pd(b, b, acc1);
        }
        alignas(32) double lanes[4];
        _mm256_store_pd(lanes, _mm256_add_pd(acc0, acc1));
        double sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
        for (; i < n; ++i) sum += double(x[i]) * double(x[i]);
        return sum;
    }
};

}  // namespace

VecMath make_avx2_vec_math() {
    return VecMathImpl<Avx2>::table();
}

}  // namespace fluoro::cpu::detail

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif  // FLUORO_VEC_AVX2

namespace fluoro::cpu::detail {

const VecMath& avx2_vec_math() {
#if FLUORO_VEC_AVX2
    static const VecMath table = make_avx2_vec_math();
    return table;
#else
    return generic_vec_math();
#endif
}

}  // namespace fluoro::cpu::detail
