// Hand-built blocks with values worked out from each layout's formula (blocks.h), element by
// element, independently of the kernels' loop structure. Scales are powers of two, so every
// expected value is exact whatever the order of operations.
#include "tensor/dequantize.h"

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "tensor/blocks.h"
#include "tensor/fp16.h"

namespace fluoro {
namespace {

template <class Block>
std::vector<float> dequantize(GgmlType type, const Block& block) {
    std::vector<float> out(Block::kElems);
    dequantize_row(type, &block, out.data(), Block::kElems);
    return out;
}

// qs[j] = j | (15 - j) << 4: element j has nibble j, element j+16 has nibble 15-j.
template <class Block>
void fill_nibble_ramp(Block& b) {
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (15 - j) << 4);
}

int ramp_nibble(int e) {
    return e < 16 ? e : 31 - e;
}

// qh = 0xAAAA5555: the 5th bit is set for even elements below 16 and odd ones from 16 up.
constexpr uint32_t kQh = 0xAAAA5555u;
int fifth_bit(int e) {
    return static_cast<int>((kQh >> e) & 1) * 16;
}

TEST(DequantizeLegacy, Q4_0) {
    BlockQ4_0 b{};
    b.d = fp32_to_fp16(0.5f);
    fill_nibble_ramp(b);
    const auto out = dequantize(GgmlType::Q4_0, b);
    for (int e = 0; e < 32; ++e) EXPECT_EQ(out[e], (ramp_nibble(e) - 8) * 0.5f) << e;
    EXPECT_EQ(out[0], -4.0f);
    EXPECT_EQ(out[16], 3.5f);
}

TEST(DequantizeLegacy, Q4_1) {
    BlockQ4_1 b{};
    b.d = fp32_to_fp16(0.25f);
    b.m = fp32_to_fp16(-1.0f);
    fill_nibble_ramp(b);
    const auto out = dequantize(GgmlType::Q4_1, b);
    for (int e = 0; e < 32; ++e) EXPECT_EQ(out[e], ramp_nibble(e) * 0.25f - 1.0f) << e;
}

TEST(DequantizeLegacy, Q5_0) {
    BlockQ5_0 b{};
    b.d = fp32_to_fp16(1.0f);
    std::memcpy(b.qh, &kQh, 4);
    fill_nibble_ramp(b);
    const auto out = dequantize(GgmlType::Q5_0, b);
    for (int e = 0; e < 32; ++e) EXPECT_EQ(out[e], ramp_nibble(e) + fifth_bit(e) - 16.0f) << e;
    EXPECT_EQ(out[0], 0.0f);    // 0 | 16 - 16
    EXPECT_EQ(out[1], -15.0f);  // 1 - 16
    EXPECT_EQ(out[17], 14.0f);  // (14 | 16) - 16
}

TEST(DequantizeLegacy, Q5_1) {
    BlockQ5_1 b{};
    b.d = fp32_to_fp16(2.0f);
    b.m = fp32_to_fp16(0.5f);
    std::memcpy(b.qh, &kQh, 4);
    fill_nibble_ramp(b);
    const auto out = dequantize(GgmlType::Q5_1, b);
    for (int e = 0; e < 32; ++e) EXPECT_EQ(out[e], (ramp_nibble(e) + fifth_bit(e)) * 2.0f + 0.5f);
}

TEST(DequantizeLegacy, Q8_0AndQ8_1) {
    BlockQ8_0 b{};
    BlockQ8_1 b1{};
    b.d = b1.d = fp32_to_fp16(0.125f);
    b1.s = fp32_to_fp16(1000.0f);  // only used by dot products
    for (int j = 0; j < 32; ++j) b.qs[j] = b1.qs[j] = static_cast<int8_t>(j * 8 - 128);
    const auto out = dequantize(GgmlType::Q8_0, b);
    for (int e = 0; e < 32; ++e) EXPECT_EQ(out[e], (e * 8 - 128) * 0.125f) << e;
    EXPECT_EQ(dequantize(GgmlType::Q8_1, b1), out);
}

TEST(DequantizeLegacy, IQ4_NL) {
    BlockIQ4_NL b{};
    b.d = fp32_to_fp16(2.0f);
    fill_nibble_ramp(b);
    const auto out = dequantize(GgmlType::IQ4_NL, b);
    for (int e = 0; e < 32; ++e) EXPECT_EQ(out[e], 2.0f * kValuesIQ4NL[ramp_nibble(e)]) << e;
    EXPECT_EQ(out[0], -254.0f);
    EXPECT_EQ(out[16], 226.0f);
}

// E2M1 nibbles: sign bit 8, then exponent/mantissa 0..7 -> 0, 0.5, 1, 1.5, 2, 3, 4, 6; the E8M0
// byte is a bare exponent 2^(e - 127).
TEST(DequantizeLegacy, MXFP4) {
    constexpr float kE2M1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    const auto e2m1 = [&](int nibble) { return (nibble & 8 ? -1.0f : 1.0f) * kE2M1[nibble & 7]; };
    BlockMXFP4 b{};
    fill_nibble_ramp(b);
    for (int e : {127, 130, 100}) {
        b.e = static_cast<uint8_t>(e);
        const auto out = dequantize(GgmlType::MXFP4, b);
        for (int k = 0; k < 32; ++k)
            EXPECT_EQ(out[k], e2m1(ramp_nibble(k)) * std::ldexp(1.0f, e - 127)) << k << " e=" << e;
    }
    // The extreme exponents: e = 0 gives 2^-127 (a float32 subnormal, 6 · 2^-127 still exact),
    // e = 254 the largest normal power 2^127; e = 255 is NaN in the OCP spec but ggml reads 2^128
    // (6 · 2^128 overflows to inf), and so do we, to match llama.cpp's numbers.
    b.e = 0;
    EXPECT_EQ(dequantize(GgmlType::MXFP4, b)[7], 6.0f * std::ldexp(1.0f, -127));
    EXPECT_EQ(dequantize(GgmlType::MXFP4, b)[2], 1.0f * std::ldexp(1.0f, -127));
    b.e = 254;
    EXPECT_EQ(dequantize(GgmlType::MXFP4, b)[1], 0.5f * std::ldexp(1.0f, 127));
    b.e = 255;
    EXPECT_EQ(dequantize(GgmlType::MXFP4, b)[1], std::ldexp(1.0f, 127));
    EXPECT_TRUE(std::isinf(dequantize(GgmlType::MXFP4, b)[7]));
}

// A deterministic byte pattern that exercises every bit.
template <size_t N>
void fill_pattern(uint8_t (&bytes)[N], int mul) {
    for (size_t i = 0; i < N; ++i) bytes[i] = static_cast<uint8_t>(i * mul + 7 * (i >> 3));
}

// Q2_K/Q3_K share a traversal: element e is in half e/128, pass (bit pair) (e%128)/32, and
// reads qs[32*half + (e%32)].
int q2_bits(const uint8_t* qs, int e) {
    const int half = e / 128, pass = (e % 128) / 32;
    return (qs[32 * half + e % 32] >> (2 * pass)) & 3;
}

TEST(DequantizeKQuants, Q2_K) {
    BlockQ2_K b{};
    b.d = fp32_to_fp16(1.0f);
    b.dmin = fp32_to_fp16(0.5f);
    fill_pattern(b.qs, 37);
    for (int i = 0; i < 16; ++i) b.scales[i] = static_cast<uint8_t>((i + 1) | (15 - i) << 4);
    const auto out = dequantize(GgmlType::Q2_K, b);
    for (int e = 0; e < 256; ++e) {
        const int sc = b.scales[e / 16];
        EXPECT_EQ(out[e], 1.0f * (sc & 15) * q2_bits(b.qs, e) - 0.5f * (sc >> 4)) << e;
    }
}

// Packs 16 six-bit Q3_K scales: low nibbles in bytes 0..7 (i < 8 low, i >= 8 high), high bit
// pairs in byte 8 + i%4 at bit 2*(i/4).
void pack_q3_k_scales(const std::array<int, 16>& s, uint8_t* out) {
    std::memset(out, 0, 12);
    for (int i = 0; i < 16; ++i) {
        out[i % 8] |= static_cast<uint8_t>((s[i] & 15) << (i < 8 ? 0 : 4));
        out[8 + i % 4] |= static_cast<uint8_t>((s[i] >> 4) << (2 * (i / 4)));
    }
}

TEST(DequantizeKQuants, Q3_K) {
    BlockQ3_K b{};
    b.d = fp32_to_fp16(0.25f);
    fill_pattern(b.qs, 29);
    fill_pattern(b.hmask, 53);
    const std::array<int, 16> s = {0, 63, 32, 31, 1, 62, 40, 20, 5, 50, 33, 17, 48, 15, 60, 3};
    pack_q3_k_scales(s, b.scales);
    const auto out = dequantize(GgmlType::Q3_K, b);
    for (int e = 0; e < 256; ++e) {
        const int high_bit = (b.hmask[e % 32] >> (e / 32)) & 1;  // one mask bit per pass
        const int q = q2_bits(b.qs, e) - (high_bit ? 0 : 4);
        EXPECT_EQ(out[e], 0.25f * (s[e / 16] - 32) * q) << e;
    }
}

// Packs 8 six-bit scales and mins as get_scale_min_k4 unpacks them.
void pack_k4_scales(const std::array<int, 8>& sc, const std::array<int, 8>& m, uint8_t* out) {
    for (int j = 0; j < 4; ++j) {
        out[j] = static_cast<uint8_t>(sc[j] | (sc[j + 4] >> 4) << 6);
        out[j + 4] = static_cast<uint8_t>(m[j] | (m[j + 4] >> 4) << 6);
        out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | (m[j + 4] & 15) << 4);
    }
}

constexpr std::array<int, 8> kSc = {1, 63, 17, 42, 33, 5, 60, 48};
constexpr std::array<int, 8> kMin = {0, 7, 63, 21, 50, 3, 16, 39};

// Q4_K/Q5_K element e is in 64-chunk e/64, sub-block e/32; the low nibble of qs[32*(e/64) +
// e%32] for even sub-blocks, the high nibble for odd ones.
int k4_nibble(const uint8_t* qs, int e) {
    const uint8_t byte = qs[32 * (e / 64) + e % 32];
    return (e / 32) % 2 == 0 ? (byte & 15) : (byte >> 4);
}

TEST(DequantizeKQuants, Q4_K) {
    BlockQ4_K b{};
    b.d = fp32_to_fp16(0.0625f);
    b.dmin = fp32_to_fp16(0.03125f);
    pack_k4_scales(kSc, kMin, b.scales);
    fill_pattern(b.qs, 41);
    const auto out = dequantize(GgmlType::Q4_K, b);
    for (int e = 0; e < 256; ++e) {
        const int sub = e / 32;
        const float expected = 0.0625f * kSc[sub] * k4_nibble(b.qs, e) - 0.03125f * kMin[sub];
        EXPECT_EQ(out[e], expected) << e;
    }
}

TEST(DequantizeKQuants, Q5_K) {
    BlockQ5_K b{};
    b.d = fp32_to_fp16(0.0625f);
    b.dmin = fp32_to_fp16(0.03125f);
    pack_k4_scales(kSc, kMin, b.scales);
    fill_pattern(b.qs, 41);
    fill_pattern(b.qh, 23);
    const auto out = dequantize(GgmlType::Q5_K, b);
    for (int e = 0; e < 256; ++e) {
        const int sub = e / 32;
        const int q = k4_nibble(b.qs, e) + 16 * ((b.qh[e % 32] >> sub) & 1);
        EXPECT_EQ(out[e], 0.0625f * kSc[sub] * q - 0.03125f * kMin[sub]) << e;
    }
}

TEST(DequantizeKQuants, Q6_K) {
    BlockQ6_K b{};
    b.d = fp32_to_fp16(0.5f);
    fill_pattern(b.ql, 31);
    fill_pattern(b.qh, 19);
    for (int i = 0; i < 16; ++i) b.scales[i] = static_cast<int8_t>(i * 17 - 128);
    const auto out = dequantize(GgmlType::Q6_K, b);
    for (int e = 0; e < 256; ++e) {
        // Half h = e/128 and quarter k = (e%128)/32: ql[64h + l + 32*(k%2)], low nibble for
        // k < 2, high for k >= 2; top bits are bit pair k of qh[32h + l].
        const int h = e / 128, k = (e % 128) / 32, l = e % 32;
        const uint8_t low_byte = b.ql[64 * h + l + 32 * (k % 2)];
        const int low = k < 2 ? (low_byte & 15) : (low_byte >> 4);
        const int high = (b.qh[32 * h + l] >> (2 * k)) & 3;
        EXPECT_EQ(out[e], 0.5f * b.scales[e / 16] * ((low | high << 4) - 32)) << e;
    }
}

TEST(DequantizeKQuants, Q8_K) {
    BlockQ8_K b{};
    b.d = 0.375f;
    for (int j = 0; j < 256; ++j) b.qs[j] = static_cast<int8_t>(j - 128);
    const auto out = dequantize(GgmlType::Q8_K, b);
    for (int e = 0; e < 256; ++e) EXPECT_EQ(out[e], 0.375f * (e - 128)) << e;
}

TEST(DequantizePlain, F32F16Bf16) {
    const float f32[3] = {1.5f, -0.0f, 3e38f};
    const uint16_t f16[3] = {0x3C00, 0xC000, 0x7C00};
    const uint16_t bf16[3] = {0x3F80, 0xC040, 0x0001};
    float out[3];
    dequantize_row(GgmlType::F32, f32, out, 3);
    EXPECT_EQ(std::memcmp(out, f32, sizeof(out)), 0);
    dequantize_row(GgmlType::F16, f16, out, 3);
    EXPECT_EQ(out[0], 1.0f);
    EXPECT_EQ(out[1], -2.0f);
    EXPECT_TRUE(std::isinf(out[2]));
    dequantize_row(GgmlType::BF16, bf16, out, 3);
    EXPECT_EQ(out[0], 1.0f);
    EXPECT_EQ(out[1], -3.0f);
    EXPECT_EQ(out[2], std::bit_cast<float>(0x00010000u));
}

TEST(DequantizeRow, ManyBlocksAndUnalignedSource) {
    BlockQ4_K blocks[2]{};
    blocks[0].d = fp32_to_fp16(1.0f);
    blocks[1].d = fp32_to_fp16(-2.0f);
    pack_k4_scales(kSc, kMin, blocks[0].scales);
    pack_k4_scales(kMin, kSc, blocks[1].scales);
    fill_pattern(blocks[0].qs, 3);
    fill_pattern(blocks[1].qs, 5);
    std::vector<uint8_t> unaligned(sizeof(blocks) + 1);
    std::memcpy(unaligned.data() + 1, blocks, sizeof(blocks));

    std::vector<float> row(512);
    dequantize_row(GgmlType::Q4_K, unaligned.data() + 1, row.data(), 512);
    const auto first = dequantize(GgmlType::Q4_K, blocks[0]);
    const auto second = dequantize(GgmlType::Q4_K, blocks[1]);
    EXPECT_TRUE(std::equal(first.begin(), first.end(), row.begin()));
    EXPECT_TRUE(std::equal(second.begin(), second.end(), row.begin() + 256));
}

TEST(DequantizeRow, LengthMustBeWholeBlocks) {
    std::vector<uint8_t> src(1024);
    std::vector<float> dst(1024);
    EXPECT_THROW(dequantize_row(GgmlType::Q4_0, src.data(), dst.data(), 33), Error);
    EXPECT_THROW(dequantize_row(GgmlType::Q6_K, src.data(), dst.data(), 128), Error);
    EXPECT_THROW(dequantize_row(GgmlType::F16, src.data(), dst.data(), -1), Error);
    EXPECT_NO_THROW(dequantize_row(GgmlType::Q8_0, src.data(), dst.data(), 0));
    try {
        dequantize_row(GgmlType::Q4_K, src.data(), dst.data(), 640);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("q4_K"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("640"), std::string::npos) << e.what();
    }
}

TEST(DequantizeRow, UnsupportedTypeIsNamed) {
    std::vector<uint8_t> src(1024);
    std::vector<float> dst(256);
    try {
        dequantize_row(GgmlType::TQ1_0, src.data(), dst.data(), 256);
        FAIL() << "no error";
    } catch (const UnsupportedError& e) {
        EXPECT_NE(std::string(e.what()).find("tq1_0"), std::string::npos) << e.what();
    }
}

// type_traits().dequantize must say exactly what dequantize_row() accepts.
TEST(DequantizeRow, CapabilityFlagsMatch) {
    std::vector<uint8_t> src(4096);
    std::vector<float> dst(256);
    for (uint32_t id = 0; id < 64; ++id) {
        const TypeTraits* t = find_type_traits(id);
        if (t == nullptr) continue;
        bool supported = true;
        try {
            dequantize_row(t->type, src.data(), dst.data(), t->block_elems);
        } catch (const UnsupportedError&) {
            supported = false;
        }
        EXPECT_EQ(supported, t->dequantize) << t->name;
    }
}

}  // namespace
}  // namespace fluoro
