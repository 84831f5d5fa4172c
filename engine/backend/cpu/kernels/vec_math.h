// Float vector kernels of the CPU backend besides the matmul: the pieces attention is built from
// (q·k scores over a run of cached keys, softmax, p·V accumulation, fp16 conversion) and the
// elementwise operations of the forward pass (RMS norm, SwiGLU, GeGLU, soft-capping). One table
// of function pointers per instruction set, picked like the dot kernels (best_cpu_isa()); the
// generic table is plain C++ with libm and is the reference the SIMD tables are tested against.
//
// The SIMD versions differ from the generic one only in float summation order and in exp/tanh,
// which use a polynomial (relative error < 3e-7 over the range that matters, see
// vec_math_impl.h) instead of libm.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/kernels/vec_dot.h"

namespace fluoro::cpu {

// Element type of cached K/V rows: float, fp16, or ggml's Q8_0 / Q4_0 blocks (32 values and an
// fp16 scale each; a row of those is a whole number of blocks), dequantized in registers.
enum class KvElem { F32, F16, Q8_0, Q4_0 };

// What the attention readout needs from one row of logits besides its probabilities.
inline constexpr int64_t kSoftmaxStatsBlock = 64;  // logits per block_max entry
struct SoftmaxStats {
    float sum_p = 0;    // Σ p
    float sum_ps = 0;   // Σ p · s (entropy = lse · Σp − Σ p·s)
    int64_t below = 0;  // how many s < cut
};

struct VecMath {
    // dst[i] = fp16(src[i]) (round to nearest even).
    void (*f32_to_f16)(const float* src, uint16_t* dst, int64_t n);
    // dst[i] = fp32(fp16(src[i])): what a value looks like after an F16 cache stored it.
    void (*round_f16)(const float* src, float* dst, int64_t n);

    // Attention scores over n cached key rows (row j at k + j * k_stride bytes, dk elements of
    // `elem`): s[g * s_stride + j] = scale * Σ_i q[g * dk + i] · k_j[i] for g < group. Quantized
    // rows give the bits the F32 kernel gives over the same rows dequantized.
    void (*qk)(KvElem elem, const float* q, int group, int64_t dk, const std::byte* k,
               size_t k_stride, int64_t n, float scale, float* s, int64_t s_stride);
    // Attention output over n cached value rows: o[g * o_stride + d] += Σ_j p[g * p_stride + j]
    // · v_j[d] for g < group, d < dv.
    void (*pv)(KvElem elem, const float* p, int group, int64_t p_stride, int64_t n,
               const std::byte* v, size_t v_stride, int64_t dv, float* o, int64_t o_stride);

    float (*max)(const float* x, int64_t n);  // n >= 1
    // x[i] = exp(x[i] - sub); returns Σ x[i].
    float (*exp_sub_sum)(float* x, int64_t n, float sub);
    // One pass over a row of logits s (n >= 1): p[i] = exp(s[i] - lse), block_max[b] = the max
    // of s over [b * kSoftmaxStatsBlock, ...) for each of the ceil(n / kSoftmaxStatsBlock) blocks,
    // and the sums and count above. p must not alias s.
    SoftmaxStats (*softmax_stats)(const float* s, int64_t n, float lse, float cut, float* p,
                                  float* block_max);
    // x[i] *= s; then, with round, x[i] = fp32(fp16(x[i])).
    void (*scale)(float* x, int64_t n, float s, bool round);
    // x[i] = cap * tanh(x[i] / cap).
    void (*softcap)(float* x, int64_t n, float cap);

    // y = x / sqrt(mean(x²) + eps) * w; the mean accumulates in double, as ggml's does.
    void (*rms_norm)(const float* x, const float* w, float* y, int64_t n, float eps);
    // gate[i] = silu(gate[i]) * up[i]
    void (*swiglu)(float* gate, const float* up, int64_t n);
    // gate[i] = gelu_tanh(gate[i]) * up[i]
    void (*geglu_tanh)(float* gate, const float* up, int64_t n);
    // x[i] += y[i]
    void (*add)(float* x, const float* y, int64_t n);
};

// The table for `isa` (throws UnsupportedError for an instruction set this CPU lacks).
const VecMath& vec_math(CpuIsa isa = best_cpu_isa());

}  // namespace fluoro::cpu
