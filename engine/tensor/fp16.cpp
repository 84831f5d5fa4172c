#include "tensor/fp16.h"

#include <bit>

namespace fluoro {
namespace {

constexpr uint32_t kF32SignMask = 0x80000000u;
constexpr uint32_t kF32AbsMask = 0x7FFFFFFFu;
constexpr uint32_t kF32Inf = 0x7F800000u;
constexpr uint32_t kF32QuietBit = 0x00400000u;

// v >> shift, rounded to nearest with ties to even (1 <= shift <= 31).
uint32_t shift_right_round_even(uint32_t v, int shift) {
    const uint32_t q = v >> shift;
    const uint32_t rem = v & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    return (rem > half || (rem == half && (q & 1))) ? q + 1 : q;
}

}  // namespace

float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    const uint32_t exp = (h >> 10) & 0x1F;
    const uint32_t mant = h & 0x3FF;
    if (exp == 0x1F) {  // inf, or NaN (made quiet, payload kept)
        const uint32_t quiet = mant != 0 ? kF32QuietBit : 0;
        return std::bit_cast<float>(sign | kF32Inf | quiet | (mant << 13));
    }
    if (exp != 0)  // normal: rebias the exponent from 15 to 127
        return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
    const float magnitude = static_cast<float>(mant) * 0x1p-24f;  // zero or subnormal, exact
    return sign ? -magnitude : magnitude;
}

uint16_t fp32_to_fp16(float f) {
    const uint32_t bits = std::bit_cast<uint32_t>(f);
    const auto sign = static_cast<uint16_t>((bits & kF32SignMask) >> 16);
    const uint32_t abs = bits & kF32AbsMask;
    if (abs > kF32Inf) return sign | 0x7E00;       // NaN
    if (abs >= 0x47800000u) return sign | 0x7C00;  // >= 2^16 (or inf): overflows
    if (abs >= 0x38800000u) {                      // >= 2^-14: a normal half
        // Rebias the exponent (127 -> 15) and drop 13 mantissa bits; a carry out of the
        // mantissa correctly bumps the exponent (65520 rounds up to inf).
        return sign | static_cast<uint16_t>(shift_right_round_even(abs - 0x38000000u, 13));
    }
    if (abs < 0x33000000u) return sign;  // < 2^-25: rounds to zero (2^-25 itself ties to 0)
    // Subnormal half: value = m * 2^(e - 150), in units of 2^-24 that is m >> (126 - e).
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
    return sign | static_cast<uint16_t>(shift_right_round_even(mant, 126 - static_cast<int>(exp)));
}

float bf16_to_fp32(uint16_t h) {
    return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

uint16_t fp32_to_bf16(float f) {
    const uint32_t bits = std::bit_cast<uint32_t>(f);
    if ((bits & kF32AbsMask) > kF32Inf) return static_cast<uint16_t>((bits >> 16) | 0x40);
    return static_cast<uint16_t>(shift_right_round_even(bits, 16));
}

}  // namespace fluoro
