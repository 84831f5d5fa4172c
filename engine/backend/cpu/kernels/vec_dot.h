// Dot products between one row of weights stored in a ggml type and activation rows already
// converted to that type's partner format (vec_dot_partner): the inner loops of the CPU matmul.
// Quantized types multiply integers per block (int32 sums of q_w * q_x) and apply the scales once
// per block, following ggml-cpu's scalar ("generic") ggml_vec_dot_* formulations float operation
// for float operation, so our logits track llama.cpp's. One function pointer per weight type is
// looked up once per row block; a call handles up to kMaxDotRows activation rows (a token tile),
// decoding each weight block once for all of them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/ggml_type.h"

namespace fluoro::cpu {

// Most activation rows one RowDotFn call takes: the matmul's token tile.
inline constexpr int kMaxDotRows = 8;

// out[t] = Σ_i W[i] · X_t[i] for t < n_x (1 <= n_x <= kMaxDotRows), n elements (a whole number of
// weight blocks). w_row is one weight row; activation row t (in the partner format) starts at
// x + t * x_stride bytes. Block data is read in place: rows must be aligned as ggml's blocks are
// (2 bytes; 4 for Q8_K activations and F32).
using RowDotFn = void (*)(const void* w_row, const void* x, size_t x_stride, int n_x, int64_t n,
                          float* out);

// The instruction sets the kernels are compiled for. Avx2 is the same code as Generic compiled
// with AVX2 enabled (auto-vectorized); both give bit-identical results.
enum class CpuIsa { Generic, Avx2 };

// The best instruction set this CPU runs, decided once per process. FLUORO_CPU_ISA=generic in
// the environment forces the generic kernels (for comparing speed or ruling out a SIMD issue).
CpuIsa best_cpu_isa();

// Whether vec_dot() and row_dot_fn() handle weights of this type.
bool vec_dot_supported(GgmlType weight);

// The format activations are converted to before a dot product with `weight` (ggml-cpu's
// vec_dot_type): Q4_0/Q5_0/Q8_0/IQ4_NL -> Q8_0, Q4_1/Q5_1 -> Q8_1, Q2_K..Q6_K -> Q8_K,
// F16 -> F16, BF16 -> BF16, F32 -> F32. Throws UnsupportedError for other types.
GgmlType vec_dot_partner(GgmlType weight);

// The row kernel for `weight`, compiled for `isa`. Throws UnsupportedError for an unsupported
// type or an instruction set this CPU lacks.
RowDotFn row_dot_fn(GgmlType weight, CpuIsa isa = best_cpu_isa());

// Σ_i W[i] · X[i] over n elements: w_row in `weight_type`, x_row in vec_dot_partner(weight_type).
// Throws UnsupportedError for an unsupported type, Error when n is negative or not a whole number
// of blocks.
float vec_dot(GgmlType weight_type, const void* w_row, const void* x_row, int64_t n);

}  // namespace fluoro::cpu
