#include "tensor/fp16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace fluoro {
namespace {

float from_bits(uint32_t bits) {
    return std::bit_cast<float>(bits);
}
uint32_t bits_of(float f) {
    return std::bit_cast<uint32_t>(f);
}
bool is_half_nan(uint16_t h) {
    return (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0;
}

TEST(Fp16, EveryHalfRoundTrips) {
    for (uint32_t h = 0; h <= 0xFFFF; ++h) {
        const auto half = static_cast<uint16_t>(h);
        const float f = fp16_to_fp32(half);
        if (is_half_nan(half)) {
            ASSERT_TRUE(std::isnan(f)) << std::hex << h;
            ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;
            ASSERT_EQ(fp32_to_fp16(f), (h & 0x8000) | 0x7E00) << std::hex << h;
        } else {
            ASSERT_EQ(fp32_to_fp16(f), half) << std::hex << h << " -> " << f;
        }
    }
}

TEST(Fp16, KnownValues) {
    EXPECT_EQ(fp16_to_fp32(0x3C00), 1.0f);
    EXPECT_EQ(fp16_to_fp32(0xC000), -2.0f);
    EXPECT_EQ(fp16_to_fp32(0x3555), 0.333251953125f);
    EXPECT_EQ(fp16_to_fp32(0x7BFF), 65504.0f);
    EXPECT_EQ(fp16_to_fp32(0x0400), 0x1p-14f);    // smallest normal
    EXPECT_EQ(fp16_to_fp32(0x03FF), 0x3FFp-24f);  // largest subnormal
    EXPECT_EQ(fp16_to_fp32(0x0001), 0x1p-24f);    // smallest subnormal
    EXPECT_EQ(fp16_to_fp32(0x8001), -0x1p-24f);
    EXPECT_EQ(bits_of(fp16_to_fp32(0x8000)), 0x80000000u);  // -0 keeps its sign
    EXPECT_EQ(fp16_to_fp32(0x7C00), std::numeric_limits<float>::infinity());
    EXPECT_EQ(fp16_to_fp32(0xFC00), -std::numeric_limits<float>::infinity());
    EXPECT_EQ(fp32_to_fp16(0.1f), 0x2E66);
    EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
}

// Between two neighbouring halves the exact midpoint goes to the even one, anything past it
// to the nearer one; checked for every pair of finite halves, both signs.
TEST(Fp16, HalfwayCasesRoundToEven) {
    for (uint16_t h = 0; h < 0x7BFF; ++h) {
        const float lo = fp16_to_fp32(h);
        const float hi = fp16_to_fp32(static_cast<uint16_t>(h + 1));
        const float mid = (lo + hi) / 2;  // exact: halves have 11 significant bits
        const uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : h;
        ASSERT_EQ(fp32_to_fp16(mid), even) << std::hex << h;
        ASSERT_EQ(fp32_to_fp16(-mid), even | 0x8000) << std::hex << h;
        ASSERT_EQ(fp32_to_fp16(std::nextafter(mid, 0.0f)), h) << std::hex << h;
        ASSERT_EQ(fp32_to_fp16(std::nextafter(mid, hi)), h + 1) << std::hex << h;
    }
}

TEST(Fp16, OverflowGivesInfinity) {
    EXPECT_EQ(fp32_to_fp16(65519.996f), 0x7BFF);  // below the midpoint to 2^16
    EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);    // the midpoint ties to even: inf
    EXPECT_EQ(fp32_to_fp16(1e6f), 0x7C00);
    EXPECT_EQ(fp32_to_fp16(-1e6f), 0xFC00);
    EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::max()), 0x7C00);
    EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::infinity()), 0x7C00);
    EXPECT_EQ(fp32_to_fp16(-std::numeric_limits<float>::infinity()), 0xFC00);
}

TEST(Fp16, UnderflowGivesSubnormalsOrZero) {
    EXPECT_EQ(fp32_to_fp16(0x1p-24f), 0x0001);
    EXPECT_EQ(fp32_to_fp16(0x1p-25f), 0x0000);  // halfway to the smallest subnormal: even
    EXPECT_EQ(fp32_to_fp16(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
    EXPECT_EQ(fp32_to_fp16(-0x1p-25f), 0x8000);
    EXPECT_EQ(fp32_to_fp16(0x3p-25f), 0x0002);  // 1.5 units: ties to even
    EXPECT_EQ(fp32_to_fp16(0x1p-30f), 0x0000);
    EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::denorm_min()), 0x0000);
    EXPECT_EQ(fp32_to_fp16(0x7FFp-25f), 0x0400);  // rounds up into the smallest normal
}

TEST(Fp16, NanStaysQuietNan) {
    EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::quiet_NaN()), 0x7E00);
    EXPECT_EQ(fp32_to_fp16(from_bits(0x7F800001)), 0x7E00);  // signaling
    EXPECT_EQ(fp32_to_fp16(from_bits(0xFFC00000)), 0xFE00);  // sign kept
    const float f = fp16_to_fp32(0x7C01);                    // signaling half NaN
    EXPECT_TRUE(std::isnan(f));
    EXPECT_NE(bits_of(f) & 0x00400000u, 0u) << "made quiet";
}

TEST(Fp16Bf16, EveryBf16RoundTrips) {
    for (uint32_t h = 0; h <= 0xFFFF; ++h) {
        const auto b = static_cast<uint16_t>(h);
        const float f = bf16_to_fp32(b);
        ASSERT_EQ(bits_of(f), h << 16);
        const uint16_t expected = std::isnan(f) ? static_cast<uint16_t>(b | 0x40) : b;
        ASSERT_EQ(fp32_to_bf16(f), expected) << std::hex << h;
    }
}

TEST(Fp16Bf16, RoundsToNearestEven) {
    EXPECT_EQ(fp32_to_bf16(from_bits(0x3F808000)), 0x3F80);  // tie, 0x3F80 even: down
    EXPECT_EQ(fp32_to_bf16(from_bits(0x3F818000)), 0x3F82);  // tie, 0x3F81 odd: up
    EXPECT_EQ(fp32_to_bf16(from_bits(0x3F808001)), 0x3F81);
    EXPECT_EQ(fp32_to_bf16(from_bits(0x3F807FFF)), 0x3F80);
    EXPECT_EQ(fp32_to_bf16(from_bits(0xBF818000)), 0xBF82);
    EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds to inf
    EXPECT_EQ(fp32_to_bf16(from_bits(0x00018000)), 0x0002);  // subnormals are not flushed
    EXPECT_EQ(fp32_to_bf16(from_bits(0x00008000)), 0x0000);
    EXPECT_EQ(fp32_to_bf16(1.0f), 0x3F80);
    EXPECT_EQ(fp32_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
}

TEST(Fp16Bf16, NanIsForcedQuiet) {
    EXPECT_EQ(fp32_to_bf16(from_bits(0x7F800001)), 0x7FC0);  // payload below bf16: quiet bit
    EXPECT_EQ(fp32_to_bf16(from_bits(0xFF810000)), 0xFFC1);  // top payload bits and sign kept
    EXPECT_EQ(fp32_to_bf16(from_bits(0x7FFFFFFF)), 0x7FFF);  // no rounding into the sign
}

}  // namespace
}  // namespace fluoro
