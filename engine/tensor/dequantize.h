// Dequantization: turning a row of any supported ggml tensor type into float32. These are the
// scalar reference kernels (ggml's dequantize_row_*, bit for bit); every SIMD and CUDA kernel
// is checked against them. Which types are supported is type_traits(type).dequantize.
#pragma once

#include <cstdint>

#include "tensor/ggml_type.h"

namespace fluoro {

// Converts n elements (a whole number of blocks) of `type` at src into dst[0..n).
// Throws UnsupportedError naming the type when it cannot be dequantized, and Error when n is
// negative or not a multiple of the type's block size. src needs no particular alignment.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);

}  // namespace fluoro
