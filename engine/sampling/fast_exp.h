// A branch-free exp for the sampler's softmax over the whole vocabulary. The compiler
// vectorizes a loop of it (std::exp calls stay scalar without -ffast-math), which is what keeps a
// 262144-token softmax well under a millisecond. Relative error below 1e-7 (float rounding level).
#pragma once

#include <bit>
#include <cstdint>

namespace fluoro::sampling {

// exp(x) for x <= 0 (the sampler only passes logit - max). Inputs below -87, -inf included, give
// exp(-87) ~ 1.6e-38 instead of a smaller number: negligible next to the max's own term of 1.
inline float fast_exp_nonpositive(float x) {
    // Clamp through the bit pattern: for x <= 0 (and +0) the unsigned bits grow with |x|, and an
    // integer min vectorizes where a float compare-and-select does not (NaN rules).
    uint32_t xb = std::bit_cast<uint32_t>(x);
    constexpr uint32_t kMinus87 = 0xC2AE0000u;  // bits of -87.0f
    xb = xb < kMinus87 ? xb : kMinus87;
    x = std::bit_cast<float>(xb);
    // exp(x) = 2^k * exp(r), k = round(x / ln 2), |r| <= ln 2 / 2. Adding 1.5 * 2^23 rounds to an
    // integer in the low mantissa bits (round-to-nearest), so k needs no float->int conversion.
    constexpr float kRound = 12582912.0f;
    const float kk = x * 1.44269504088896341f + kRound;
    const float k = kk - kRound;
    float r = x - k * 0.693145751953125f;  // ln 2 split in two for an exact first product
    r = r - k * 1.428606765330187045e-06f;
    // Cephes expf polynomial.
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const uint32_t scale_bits = (std::bit_cast<uint32_t>(kk) - 0x4B400000u + 127u) << 23;
    return p * std::bit_cast<float>(scale_bits);
}

}  // namespace fluoro::sampling
