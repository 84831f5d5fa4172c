// Internal to engine/tensor: the per-block reference kernels behind dequantize_row() and
// quantize_row(), overloaded on the block struct. Each reads or writes one whole block.
#pragma once

#include <cstdint>
#include <string_view>

#include "tensor/blocks.h"
#include "tensor/ggml_type.h"

namespace fluoro::detail {

// n / block size; throws Error (naming `op`, the type and n) unless n is a non-negative whole
// number of blocks. Defined in dequantize.cpp.
int64_t checked_block_count(std::string_view op, GgmlType type, int64_t n);

// dequantize_legacy.cpp: out[0..32)
void dequantize_block(const BlockQ4_0& b, float* out);
void dequantize_block(const BlockQ4_1& b, float* out);
void dequantize_block(const BlockQ5_0& b, float* out);
void dequantize_block(const BlockQ5_1& b, float* out);
void dequantize_block(const BlockQ8_0& b, float* out);
void dequantize_block(const BlockQ8_1& b, float* out);
void dequantize_block(const BlockIQ4_NL& b, float* out);
void dequantize_block(const BlockMXFP4& b, float* out);

// dequantize_kquants.cpp: out[0..256)
void dequantize_block(const BlockQ2_K& b, float* out);
void dequantize_block(const BlockQ3_K& b, float* out);
void dequantize_block(const BlockQ4_K& b, float* out);
void dequantize_block(const BlockQ5_K& b, float* out);
void dequantize_block(const BlockQ6_K& b, float* out);
void dequantize_block(const BlockQ8_K& b, float* out);

// dequantize_iquants.cpp: out[0..256)
void dequantize_block(const BlockIQ4_XS& b, float* out);
void dequantize_block(const BlockIQ2_XXS& b, float* out);
void dequantize_block(const BlockIQ2_XS& b, float* out);
void dequantize_block(const BlockIQ2_S& b, float* out);
void dequantize_block(const BlockIQ3_XXS& b, float* out);
void dequantize_block(const BlockIQ3_S& b, float* out);
void dequantize_block(const BlockIQ1_S& b, float* out);
void dequantize_block(const BlockIQ1_M& b, float* out);

// quantize_blocks.cpp: x[0..Block::kElems)
void quantize_block(const float* x, BlockQ4_0& out);
void quantize_block(const float* x, BlockQ4_1& out);
void quantize_block(const float* x, BlockQ5_0& out);
void quantize_block(const float* x, BlockQ5_1& out);
void quantize_block(const float* x, BlockQ8_0& out);
void quantize_block(const float* x, BlockQ8_1& out);
void quantize_block(const float* x, BlockQ8_K& out);

}  // namespace fluoro::detail
