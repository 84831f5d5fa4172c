// Activations into the weight type's partner format (kernels/vec_dot.h: vec_dot_partner), the
// first step of every CPU matmul. The SIMD converters give exactly the bytes of the reference
// quantize_row() (engine/tensor: ggml's quantize_row_*_ref): Q8_0/Q8_1 round halves away from
// zero as roundf does (llama.cpp's own AVX2 path rounds them to even; we keep the reference), Q8_K
// rounds to nearest even as ggml's nearest_int does. Blocks holding inf or NaN, or so tiny that
// the inverse scale overflows, go through the reference code.
#pragma once

#include <cstdint>

#include "backend/cpu/kernels/vec_dot.h"
#include "tensor/ggml_type.h"

namespace fluoro::cpu {

// quantize_row(partner, x, dst, n), bit for bit, with the converter for `isa` where there is one
// (Q8_0, Q8_1 and Q8_K on Avx2 and Avx512). Throws as quantize_row does, and UnsupportedError
// for an instruction set this CPU lacks.
void quantize_partner_row(GgmlType partner, const float* x, void* dst, int64_t n,
                          CpuIsa isa = best_cpu_isa());

namespace detail {
// quantize_x86.cpp; only call when cpu_isa_supported(CpuIsa::Avx2). Each handles whole blocks.
bool quantize_x86_compiled();
void quantize_q8_0_avx2(const float* x, void* dst, int64_t n_blocks);
void quantize_q8_1_avx2(const float* x, void* dst, int64_t n_blocks);
void quantize_q8_k_avx2(const float* x, void* dst, int64_t n_blocks);
// Straight into the group kernels' widened blocks (interleave.h: BlockQ8_1Wide, BlockQ8_0Wide).
void quantize_q8_1_wide_avx2(const float* x, void* dst, int64_t n_blocks);
void quantize_q8_0_wide_avx2(const float* x, void* dst, int64_t n_blocks);
}  // namespace detail

}  // namespace fluoro::cpu
