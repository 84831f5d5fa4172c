// Quantize -> dequantize round trips with per-type error bounds, plus the edge cases: zeros,
// constant rows, huge and tiny values, NaN, bad lengths. Bit-exactness against ggml's output is
// checked separately against the gguf package (gguf_reference_test.cpp).
#include "tensor/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "tensor/blocks.h"
#include "tensor/dequantize.h"
#include "tensor/fp16.h"

namespace fluoro {
namespace {

std::vector<uint8_t> quantize(GgmlType type, const std::vector<float>& x) {
    std::vector<uint8_t> q(*row_bytes(type, x.size()));
    quantize_row(type, x.data(), q.data(), static_cast<int64_t>(x.size()));
    return q;
}

std::vector<float> round_trip(GgmlType type, const std::vector<float>& x) {
    const std::vector<uint8_t> q = quantize(type, x);
    std::vector<float> y(x.size());
    dequantize_row(type, q.data(), y.data(), static_cast<int64_t>(x.size()));
    return y;
}

std::vector<float> random_row(size_t n, float scale, float offset, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(offset, scale);
    std::vector<float> x(n);
    for (float& v : x) v = normal(rng);
    return x;
}

float block_absmax(const float* x, int n) {
    float m = 0;
    for (int i = 0; i < n; ++i) m = std::max(m, std::fabs(x[i]));
    return m;
}

// What storing a scale in fp16 costs, at most, on an element `levels` steps from zero.
float fp16_slop(float d, int levels) {
    return levels * std::fabs(d - fp16_to_fp32(fp32_to_fp16(d)));
}

// Error bound per block for a type, given the block's values.
using BoundFn = float (*)(const float* x);

float bound_q8_0(const float* x) {  // round to nearest of 255 levels: half a step
    const float d = block_absmax(x, kQK) / 127;
    return d / 2 + fp16_slop(d, 127);
}
float bound_q4_0(const float* x) {  // 16 levels, -8..7: the +8d end is clipped to 7d
    const float d = block_absmax(x, kQK) / 8;
    return d + fp16_slop(d, 8);
}
float bound_q5_0(const float* x) {
    const float d = block_absmax(x, kQK) / 16;
    return d + fp16_slop(d, 16);
}
template <int Levels>
float bound_min_max(const float* x) {  // levels spanning [min, max]; m rounded to fp16
    const auto [lo, hi] = std::minmax_element(x, x + kQK);
    const float d = (*hi - *lo) / Levels;
    return d / 2 + fp16_slop(d, Levels) + std::fabs(*lo - fp16_to_fp32(fp32_to_fp16(*lo)));
}
float bound_q8_k(const float* x) {  // d is float32: half a step
    return block_absmax(x, kQK_K) / 127 / 2;
}

struct RoundTripCase {
    GgmlType type;
    int block;
    BoundFn bound;
};

class QuantizeRoundTrip : public testing::TestWithParam<RoundTripCase> {};

TEST_P(QuantizeRoundTrip, ErrorWithinBound) {
    const RoundTripCase c = GetParam();
    for (unsigned seed = 1; seed <= 20; ++seed) {
        const float scale = std::pow(10.0f, static_cast<float>(seed % 7) - 3);  // 1e-3 .. 1e3
        const float offset = seed % 3 == 0 ? 2 * scale : 0;                     // skewed rows
        const std::vector<float> x = random_row(1024, scale, offset, seed);
        const std::vector<float> y = round_trip(c.type, x);
        for (size_t b = 0; b < x.size(); b += c.block) {
            // 0.1% on top of the bound for float rounding in x / d and in q * d + m.
            const float bound = c.bound(&x[b]) * 1.001f;
            for (int i = 0; i < c.block; ++i) {
                ASSERT_LE(std::fabs(x[b + i] - y[b + i]), bound)
                    << type_name(c.type) << " seed " << seed << " element " << b + i;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Quantize, QuantizeRoundTrip,
                         testing::Values(RoundTripCase{GgmlType::Q8_0, kQK, bound_q8_0},
                                         RoundTripCase{GgmlType::Q8_1, kQK, bound_q8_0},
                                         RoundTripCase{GgmlType::Q4_0, kQK, bound_q4_0},
                                         RoundTripCase{GgmlType::Q5_0, kQK, bound_q5_0},
                                         RoundTripCase{GgmlType::Q4_1, kQK, bound_min_max<15>},
                                         RoundTripCase{GgmlType::Q5_1, kQK, bound_min_max<31>},
                                         RoundTripCase{GgmlType::Q8_K, kQK_K, bound_q8_k}),
                         [](const auto& p) { return std::string(type_name(p.param.type)); });

TEST(QuantizeRoundTrip, Q4_0ErrorIsHalfAStepAwayFromTheClippedEnd) {
    const std::vector<float> x = random_row(4096, 1.0f, 0.0f, 99);
    const std::vector<float> y = round_trip(GgmlType::Q4_0, x);
    for (size_t b = 0; b < x.size(); b += kQK) {
        const float max = *std::max_element(
            &x[b], &x[b] + kQK, [](float p, float q) { return std::fabs(p) < std::fabs(q); });
        const float d = max / -8;  // levels -8d .. 7d; values beyond 7.5d (sign of -max) clip
        for (int i = 0; i < kQK; ++i) {
            if (x[b + i] / d > 7.5f) continue;
            ASSERT_LE(std::fabs(x[b + i] - y[b + i]), std::fabs(d) / 2 + fp16_slop(d, 8));
        }
    }
}

TEST(QuantizeRoundTrip, FloatTypes) {
    const std::vector<float> x = random_row(4096, 100.0f, 0.0f, 7);
    const std::vector<float> f32 = round_trip(GgmlType::F32, x);
    const std::vector<float> f16 = round_trip(GgmlType::F16, x);
    const std::vector<float> bf16 = round_trip(GgmlType::BF16, x);
    for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(f32[i], x[i]);
        if (std::fabs(x[i]) >= 0x1p-14f) {  // normal halves: relative error 2^-11
            ASSERT_LE(std::fabs(f16[i] - x[i]), std::fabs(x[i]) * 0x1p-11f);
        }
        ASSERT_LE(std::fabs(bf16[i] - x[i]), std::fabs(x[i]) * 0x1p-8f);
    }
}

const GgmlType kBlockTypes[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K};

TEST(QuantizeEdgeCases, ZerosStayZero) {
    const std::vector<float> x(512, 0.0f);
    for (GgmlType type : kBlockTypes) {
        for (float v : round_trip(type, x)) ASSERT_EQ(v, 0.0f) << type_name(type);
        const std::vector<uint8_t> q = quantize(type, x);
        if (type == GgmlType::Q8_K || type == GgmlType::Q8_0 || type == GgmlType::Q8_1) {
            EXPECT_TRUE(std::all_of(q.begin(), q.end(), [](uint8_t b) { return b == 0; }))
                << type_name(type);
        }
    }
}

TEST(QuantizeEdgeCases, ConstantRowsAreExactWhenTheScaleIs) {
    // 0.75 is exact in fp16 and so is 0.75 / -8, 0.75 / -16 and 0.75 as Q4_1's minimum.
    const std::vector<float> x(256, 0.75f);
    for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q4_1, GgmlType::Q5_1}) {
        for (float v : round_trip(type, x)) ASSERT_EQ(v, 0.75f) << type_name(type);
    }
    for (float v : round_trip(GgmlType::Q8_K, x)) ASSERT_FLOAT_EQ(v, 0.75f);
    for (float v : round_trip(GgmlType::Q8_0, x)) ASSERT_NEAR(v, 0.75f, 0.75f * 0x1p-10f);
}

TEST(QuantizeEdgeCases, Q8_1SumAndQ8_KBlockSums) {
    const std::vector<float> x = random_row(256, 3.0f, 0.5f, 5);
    const std::vector<uint8_t> q1 = quantize(GgmlType::Q8_1, x);
    for (int b = 0; b < 8; ++b) {
        BlockQ8_1 block;
        std::memcpy(&block, q1.data() + b * sizeof(block), sizeof(block));
        int sum = 0;
        for (int8_t v : block.qs) sum += v;
        const float d = block_absmax(&x[b * kQK], kQK) / 127;  // s uses the unrounded d
        EXPECT_EQ(block.s, fp32_to_fp16(static_cast<float>(sum) * d)) << b;
    }
    const std::vector<uint8_t> qk = quantize(GgmlType::Q8_K, x);
    BlockQ8_K block;
    std::memcpy(&block, qk.data(), sizeof(block));
    for (int g = 0; g < 16; ++g) {
        int sum = 0;
        for (int l = 0; l < 16; ++l) sum += block.qs[16 * g + l];
        EXPECT_EQ(block.bsums[g], sum) << g;
    }
    // The largest-magnitude element lands on -127 and d carries its sign.
    const auto it = std::max_element(x.begin(), x.end(),
                                     [](float p, float r) { return std::fabs(p) < std::fabs(r); });
    EXPECT_EQ(block.qs[it - x.begin()], -127);
    EXPECT_EQ(block.d, 1 / (-127.0f / *it));
}

TEST(QuantizeEdgeCases, HugeValuesOverflowFp16ScalesButNotQ8_K) {
    std::vector<float> x = random_row(256, 1e30f, 0.0f, 3);
    const std::vector<float> y = round_trip(GgmlType::Q8_K, x);
    for (size_t i = 0; i < x.size(); ++i)
        ASSERT_LE(std::fabs(x[i] - y[i]), bound_q8_k(x.data()) * 1.001f);
    // A block scale of ~1e28 is inf in fp16, as in ggml; the quants are still written.
    const std::vector<uint8_t> q = quantize(GgmlType::Q8_0, x);
    BlockQ8_0 block;
    std::memcpy(&block, q.data(), sizeof(block));
    EXPECT_EQ(block.d, 0x7C00);
}

TEST(QuantizeEdgeCases, TinyValuesUnderflowToZeroScale) {
    const std::vector<float> x = random_row(256, 1e-12f, 0.0f, 4);
    for (GgmlType type : kBlockTypes) {
        const std::vector<float> y = round_trip(type, x);
        for (size_t i = 0; i < x.size(); ++i) {
            ASSERT_TRUE(std::isfinite(y[i])) << type_name(type);
            ASSERT_LE(std::fabs(x[i] - y[i]), 1e-10f) << type_name(type);
        }
    }
}

TEST(QuantizeEdgeCases, NonFiniteInputIsHandledWithoutUndefinedBehaviour) {
    std::vector<float> x = random_row(256, 1.0f, 0.0f, 6);
    x[3] = std::numeric_limits<float>::quiet_NaN();
    x[40] = std::numeric_limits<float>::infinity();
    x[77] = -std::numeric_limits<float>::infinity();
    for (GgmlType type : kBlockTypes) {
        const std::vector<uint8_t> q = quantize(type, x);  // any bytes; must not crash
        EXPECT_EQ(q.size(), *row_bytes(type, x.size()));
    }
    EXPECT_EQ(quantize(GgmlType::F16, x)[6], 0x00);  // NaN -> 0x7E00, little-endian
    EXPECT_EQ(quantize(GgmlType::F16, x)[7], 0x7E);
}

TEST(QuantizeRow, LengthMustBeWholeBlocks) {
    std::vector<float> src(512);
    std::vector<uint8_t> dst(4096);
    EXPECT_THROW(quantize_row(GgmlType::Q8_0, src.data(), dst.data(), 48), Error);
    EXPECT_THROW(quantize_row(GgmlType::Q8_K, src.data(), dst.data(), 32), Error);
    EXPECT_THROW(quantize_row(GgmlType::F16, src.data(), dst.data(), -2), Error);
    EXPECT_NO_THROW(quantize_row(GgmlType::Q4_0, src.data(), dst.data(), 0));
}

TEST(QuantizeRow, UnsupportedTypeIsNamed) {
    std::vector<float> src(256);
    std::vector<uint8_t> dst(4096);
    try {
        quantize_row(GgmlType::Q4_K, src.data(), dst.data(), 256);
        FAIL() << "no error";
    } catch (const UnsupportedError& e) {
        EXPECT_NE(std::string(e.what()).find("q4_K"), std::string::npos) << e.what();
    }
}

TEST(QuantizeRow, UnalignedDestination) {
    const std::vector<float> x = random_row(64, 1.0f, 0.0f, 8);
    const std::vector<uint8_t> aligned = quantize(GgmlType::Q5_0, x);
    std::vector<uint8_t> buffer(aligned.size() + 1);
    quantize_row(GgmlType::Q5_0, x.data(), buffer.data() + 1, 64);
    EXPECT_TRUE(std::equal(aligned.begin(), aligned.end(), buffer.begin() + 1));
}

// type_traits().quantize must say exactly what quantize_row() accepts.
TEST(QuantizeRow, CapabilityFlagsMatch) {
    std::vector<float> src(256, 1.0f);
    std::vector<uint8_t> dst(4096);
    for (uint32_t id = 0; id < 64; ++id) {
        const TypeTraits* t = find_type_traits(id);
        if (t == nullptr) continue;
        bool supported = true;
        try {
            quantize_row(t->type, src.data(), dst.data(), t->block_elems);
        } catch (const UnsupportedError&) {
            supported = false;
        }
        EXPECT_EQ(supported, t->quantize) << t->name;
    }
}

}  // namespace
}  // namespace fluoro
