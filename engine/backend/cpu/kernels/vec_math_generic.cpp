// The VecMath kernels for the build's baseline instruction set: one float at a time with libm's
// exp, the reference the SIMD tables are compared with.
#include <cmath>

#include "backend/cpu/kernels/vec_math_impl.h"
#include "backend/cpu/kernels/vec_math_table.h"
#include "tensor/fp16.h"

namespace fluoro::cpu::detail {
namespace {

struct Scalar {
    using T = float;
    static constexpr int W = 1;
    static constexpr int kRegisters = 32;  // scalars: any U works; this gives pv U = 4 to 8
    static T zero() { return 0.0f; }
    static T set1(float x) { return x; }
    static T load(const float* p) { return *p; }
    static T load(const uint16_t* p) { return fp16_to_fp32(*p); }
    static T load_i8(const int8_t* p) { return float(*p); }
    static T load_nibbles(const uint8_t* p, bool high) { return float(high ? *p >> 4 : *p & 0x0F); }
    static void store(float* p, T v) { *p = v; }
    static void store_f16(uint16_t* p, T v) { *p = fp32_to_fp16(v); }
    static T add(T a, T b) { return a + b; }
    static T sub(T a, T b) { return a - b; }
    static T mul(T a, T b) { return a * b; }
    static T div(T a, T b) { return a / b; }
    static T fma(T a, T b, T c) { return a * b + c; }  // not fused: -ffp-contract=off here
    static T max(T a, T b) { return a > b ? a : b; }
    static int count_less(T a, T b) { return a < b ? 1 : 0; }
    static float reduce_add(T v) { return v; }
    static void reduce4(T a, T b, T c, T d, float* out) {
        out[0] = a;
        out[1] = b;
        out[2] = c;
        out[3] = d;
    }
    static float reduce_max(T v) { return v; }
    static T exp(T x) { return std::exp(x); }
    static float f16(uint16_t h) { return fp16_to_fp32(h); }
    static uint16_t to_f16(float x) { return fp32_to_fp16(x); }
    static float exp1(float x) { return std::exp(x); }
    static double sum_squares_f64(const float* x, int64_t n) {
        double sum = 0.0;
        for (int64_t i = 0; i < n; ++i) sum += double(x[i]) * double(x[i]);
        return sum;
    }
};

}  // namespace

const VecMath& generic_vec_math() {
    static const VecMath table = VecMathImpl<Scalar>::table();
    return table;
}

}  // namespace fluoro::cpu::detail
