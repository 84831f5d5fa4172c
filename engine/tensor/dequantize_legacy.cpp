// Dequantization of the 32-element block types (ggml-quants.c dequantize_row_q4_0 ...).
// The float expressions keep ggml's order of operations, so results are bit-identical.
#include <cstring>

#include "tensor/block_kernels.h"
#include "tensor/fp16.h"

namespace fluoro::detail {
namespace {

constexpr int kHalf = kQK / 2;

// Element j of the block sits in the low nibble of qs[j], element j+16 in its high nibble.
int low_nibble(const uint8_t* qs, int j) {
    return qs[j] & 0x0F;
}
int high_nibble(const uint8_t* qs, int j) {
    return qs[j] >> 4;
}

// The 5th bit of element j (0..31) is bit j of the little-endian qh word, moved to bit 4.
int fifth_bit(const uint8_t* qh, int j) {
    uint32_t bits;
    std::memcpy(&bits, qh, sizeof(bits));
    return static_cast<int>((bits >> j) & 1) << 4;
}

}  // namespace

void dequantize_block(const BlockQ4_0& b, float* out) {
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < kHalf; ++j) {
        out[j] = static_cast<float>(low_nibble(b.qs, j) - 8) * d;
        out[j + kHalf] = static_cast<float>(high_nibble(b.qs, j) - 8) * d;
    }
}

void dequantize_block(const BlockQ4_1& b, float* out) {
    const float d = fp16_to_fp32(b.d);
    const float m = fp16_to_fp32(b.m);
    for (int j = 0; j < kHalf; ++j) {
        out[j] = static_cast<float>(low_nibble(b.qs, j)) * d + m;
        out[j + kHalf] = static_cast<float>(high_nibble(b.qs, j)) * d + m;
    }
}

void dequantize_block(const BlockQ5_0& b, float* out) {
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < kHalf; ++j) {
        const int q0 = low_nibble(b.qs, j) | fifth_bit(b.qh, j);
        const int q1 = high_nibble(b.qs, j) | fifth_bit(b.qh, j + kHalf);
        out[j] = static_cast<float>(q0 - 16) * d;
        out[j + kHalf] = static_cast<float>(q1 - 16) * d;
    }
}

void dequantize_block(const BlockQ5_1& b, float* out) {
    const float d = fp16_to_fp32(b.d);
    const float m = fp16_to_fp32(b.m);
    for (int j = 0; j < kHalf; ++j) {
        const int q0 = low_nibble(b.qs, j) | fifth_bit(b.qh, j);
        const int q1 = high_nibble(b.qs, j) | fifth_bit(b.qh, j + kHalf);
        out[j] = static_cast<float>(q0) * d + m;
        out[j + kHalf] = static_cast<float>(q1) * d + m;
    }
}

void dequantize_block(const BlockQ8_0& b, float* out) {
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < kQK; ++j) out[j] = static_cast<float>(b.qs[j]) * d;
}

// ggml has no dequantize_row_q8_1 (Q8_1 only ever feeds dot products); the sum s is ignored.
void dequantize_block(const BlockQ8_1& b, float* out) {
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < kQK; ++j) out[j] = static_cast<float>(b.qs[j]) * d;
}

void dequantize_block(const BlockIQ4_NL& b, float* out) {
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < kHalf; ++j) {
        out[j] = d * static_cast<float>(kValuesIQ4NL[low_nibble(b.qs, j)]);
        out[j + kHalf] = d * static_cast<float>(kValuesIQ4NL[high_nibble(b.qs, j)]);
    }
}

// ggml's dequantize_row_mxfp4: x0*d with the int8 value first.
void dequantize_block(const BlockMXFP4& b, float* out) {
    const float d = e8m0_to_fp32_half(b.e);
    for (int j = 0; j < kHalf; ++j) {
        out[j] = static_cast<float>(kValuesMXFP4[low_nibble(b.qs, j)]) * d;
        out[j + kHalf] = static_cast<float>(kValuesMXFP4[high_nibble(b.qs, j)]) * d;
    }
}

}  // namespace fluoro::detail
