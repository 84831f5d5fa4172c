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
#include <string_view>

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

// Two consecutive weight rows (w, w + w_stride bytes) against the same tile of activation rows:
// out0[t] and out1[t] as two RowDotFn calls would give them, bit for bit. Each activation block
// and its scale are loaded once for both rows, which is where a prefill tile spends most of its
// instructions. Only where the registers hold both rows' accumulators (AVX-512's 32).
using RowPairDotFn = void (*)(const void* w, size_t w_stride, const void* x, size_t x_stride,
                              int n_x, int64_t n, float* out0, float* out1);

// Rows interleaved in groups of kGroupRows (kernels/interleave.h) against the same tile:
// out[r * kMaxDotRows + t] for the group's rows r and tokens t < n_x. w_group is the group's
// first block; the activation rows are in interleave.h's widened format (quantize_group_x_row),
// the other arguments are RowDotFn's. A row's result does not depend on n_x.
using RowGroupDotFn = void (*)(const void* w_group, const void* x, size_t x_stride, int n_x,
                               int64_t n, float* out);

// The instruction sets the kernels are compiled for, in increasing order:
//  Generic  the reference: portable C++ copying ggml-cpu's scalar float operations in order.
//  Avx2     AVX2 + FMA + F16C: hand-written kernels for Q4_0/Q4_1/Q5_0/Q8_0/IQ4_NL/MXFP4/Q4_K/
//           Q6_K/IQ4_XS (ggml's maddubs/sign formulations), the other types' generic code
//           compiled with AVX2.
//  Avx512   adds AVX-512 F/BW/VL + VNNI: the legacy-quant kernels use vpdpbusd.
// The SIMD kernels compute the same integer block sums; only the float accumulation order differs
// (8 FMA lanes, like ggml's SIMD paths), within ~1e-6 of Σ|w·x| of the generic result.
enum class CpuIsa { Generic, Avx2, Avx512 };

// "generic", "avx2", "avx512".
std::string_view cpu_isa_name(CpuIsa isa);

// Whether this build has kernels for `isa` and this CPU runs them.
bool cpu_isa_supported(CpuIsa isa);

// The instruction set the kernels use, decided once per process: the best supported one, or
// FLUORO_CPU_ISA=generic|avx2|avx512 from the environment (for comparing speed or ruling out a
// SIMD issue; a set this CPU lacks falls back to the best supported below it, an unknown name is
// ignored).
CpuIsa best_cpu_isa();

// cpu_isa_name(best_cpu_isa()): what `fluoro info --system` reports.
std::string_view cpu_isa_name();

// Whether vec_dot() and row_dot_fn() handle weights of this type.
bool vec_dot_supported(GgmlType weight);

// The format activations are converted to before a dot product with `weight` (ggml-cpu's
// vec_dot_type): Q4_0/Q5_0/Q8_0/IQ4_NL/MXFP4 -> Q8_0, Q4_1/Q5_1 -> Q8_1, Q2_K..Q6_K, IQ4_XS and the
// IQ1/IQ2/IQ3 types -> Q8_K, F16 -> F16, BF16 -> BF16, F32 -> F32. Throws UnsupportedError for
// other types.
GgmlType vec_dot_partner(GgmlType weight);

// The row kernel for `weight`, compiled for `isa`. Throws UnsupportedError for an unsupported
// type or an instruction set this CPU lacks.
RowDotFn row_dot_fn(GgmlType weight, CpuIsa isa = best_cpu_isa());

// The row-pair kernel for `weight` on `isa`, or null (use RowDotFn row by row).
RowPairDotFn row_pair_dot_fn(GgmlType weight, CpuIsa isa = best_cpu_isa());

// The row-group kernel for interleaved `weight` rows on `isa`, or null: then the weights stay in
// their GGUF layout (only the SIMD instruction sets have group kernels: Q4_1, Q5_0, Q8_0, Q4_K,
// Q6_K).
RowGroupDotFn row_group_dot_fn(GgmlType weight, CpuIsa isa = best_cpu_isa());

// The kernel for two adjacent row groups at once (2 · kGroupRows rows, the second group's blocks
// right after the first's; out as RowGroupDotFn's for 16 rows), or null. Each row's result has
// the same bits as row_group_dot_fn's. AVX-512 only (Q4_1, Q5_0, Q4_K, Q6_K): its 512-bit vpdpbusd
// covers both groups in one instruction.
RowGroupDotFn row_group_pair_dot_fn(GgmlType weight, CpuIsa isa = best_cpu_isa());

// Σ_i W[i] · X[i] over n elements: w_row in `weight_type`, x_row in vec_dot_partner(weight_type).
// Throws UnsupportedError for an unsupported type, Error when n is negative or not a whole number
// of blocks.
float vec_dot(GgmlType weight_type, const void* w_row, const void* x_row, int64_t n);

}  // namespace fluoro::cpu
