// Conversions between float32 and the two 16-bit float formats GGUF stores: IEEE fp16 (half)
// and bfloat16. Both narrowing conversions round to nearest, ties to even, bit for bit as
// ggml's reference conversions (and numpy's astype(float16) for every non-NaN value).
#pragma once

#include <cstdint>

namespace fluoro {

// Exact; a NaN stays NaN (quieted, sign and payload kept).
float fp16_to_fp32(uint16_t h);
// Round to nearest even; overflow gives inf, underflow a subnormal or zero. A NaN becomes the
// quiet NaN 0x7E00 with its sign, as ggml_compute_fp32_to_fp16 does.
uint16_t fp32_to_fp16(float f);

// Exact: the bf16 bits are the top half of the float32.
float bf16_to_fp32(uint16_t h);
// Round to nearest even (subnormals kept); a NaN keeps its top bits and is forced quiet, as
// ggml_compute_fp32_to_bf16 does.
uint16_t fp32_to_bf16(float f);

}  // namespace fluoro
