// Quantization: turning a float32 row into a ggml tensor type. These follow ggml's reference
// quantizers (quantize_row_*_ref), so their output equals what llama.cpp writes into model
// files and uses for activations (Q8_0, Q8_1, Q8_K). Supported types: type_traits().quantize.
#pragma once

#include <cstdint>

#include "tensor/ggml_type.h"

namespace fluoro {

// Quantizes src[0..n) (a whole number of blocks) into row_bytes(type, n) bytes at dst.
// Throws UnsupportedError naming the type when it cannot be quantized, and Error when n is
// negative or not a multiple of the type's block size. dst needs no particular alignment.
void quantize_row(GgmlType type, const float* src, void* dst, int64_t n);

}  // namespace fluoro
