// Dequantizing ggml-quantized weight rows to f32 on the GPU. Results are bit-identical to the
// CPU's fluoro::dequantize_row (engine/tensor/dequantize.h), which is their reference.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor/ggml_type.h"

namespace fluoro::cuda {

// Whether dequantize_rows supports `type` (Q8_0 and Q4_1 for now).
bool can_dequantize(GgmlType type);

// d_dst[n_rows, row_len] (f32, row-major) = dequantized d_src, which holds n_rows rows of
// row_len elements of `type` packed back to back, as in a GGUF tensor. Both pointers are
// device memory. row_len must be a multiple of the type's block size (32). Asynchronous on
// `stream`. Throws UnsupportedError for other types, Error for bad sizes or a failed launch.
void dequantize_rows(GgmlType type, const void* d_src, float* d_dst, int64_t n_rows,
                     int64_t row_len, cudaStream_t stream);

}  // namespace fluoro::cuda
