// first_non_finite_kv (kv/kv_row_check.h) on hand-made rows of each KV type: the bit patterns of
// IEEE 754 binary32 / binary16 (exponent all ones: infinity with a zero fraction, NaN otherwise),
// and for q8_0 / q4_0 the f16 scale that opens each block (34 and 18 bytes, ggml's layout).
#include "kv/kv_row_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"

namespace fluoro {
namespace {

template <typename T>
std::vector<std::byte> bytes_of(const std::vector<T>& v) {
    std::vector<std::byte> b(v.size() * sizeof(T));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

TEST(KvRowCheck, F32FindsTheFirstNanOrInfinity) {
    const float big = std::numeric_limits<float>::max(),
                tiny = std::numeric_limits<float>::denorm_min();
    EXPECT_EQ(first_non_finite_kv(KvType::F32, bytes_of<float>({0.f, -0.f, big, -big, tiny})),
              std::nullopt);
    EXPECT_EQ(first_non_finite_kv(KvType::F32, bytes_of<float>({1.f, 2.f, NAN, INFINITY})), 2u);
    EXPECT_EQ(first_non_finite_kv(KvType::F32, bytes_of<float>({1.f, -INFINITY})), 1u);
    EXPECT_EQ(first_non_finite_kv(KvType::F32, {}), std::nullopt);
}

TEST(KvRowCheck, F16FindsTheFirstNanOrInfinity) {
    // 0x7BFF = 65504 and 0xFBFF = -65504 (the largest finite halves), 0x0001 the smallest
    // subnormal; 0x7C00 = +inf, 0xFC00 = -inf, 0x7E00 a quiet NaN, 0x7C01 a signalling one.
    EXPECT_EQ(
        first_non_finite_kv(KvType::F16, bytes_of<uint16_t>({0x0000, 0x7BFF, 0xFBFF, 0x0001})),
        std::nullopt);
    EXPECT_EQ(first_non_finite_kv(KvType::F16, bytes_of<uint16_t>({0x3C00, 0x7C00})), 1u);
    EXPECT_EQ(first_non_finite_kv(KvType::F16, bytes_of<uint16_t>({0xFC00, 0x3C00})), 0u);
    EXPECT_EQ(first_non_finite_kv(KvType::F16, bytes_of<uint16_t>({0x3C00, 0x3C00, 0x7C01})), 2u);
    EXPECT_EQ(first_non_finite_kv(KvType::F16, bytes_of<uint16_t>({0x7E00})), 0u);
}

// Quantized rows: only the scale can be non-finite; quant bytes of 0xFF are ordinary values.
TEST(KvRowCheck, QuantizedBlocksAreJudgedByTheirScale) {
    for (const KvType t : {KvType::Q8_0, KvType::Q4_0}) {
        const size_t block = kv_type_info(t).block_bytes;
        ASSERT_EQ(block, t == KvType::Q8_0 ? 34u : 18u);
        std::vector<std::byte> row(3 * block, std::byte{0xFF});
        const uint16_t one = 0x3C00, nan = 0x7E00;
        for (size_t b = 0; b < 3; ++b) std::memcpy(row.data() + b * block, &one, 2);
        EXPECT_EQ(first_non_finite_kv(t, row), std::nullopt) << kv_type_name(t);
        std::memcpy(row.data() + 2 * block, &nan, 2);
        EXPECT_EQ(first_non_finite_kv(t, row), 2u) << kv_type_name(t);
        row.pop_back();
        EXPECT_THROW(first_non_finite_kv(t, row), Error) << kv_type_name(t) << ": a partial block";
    }
    EXPECT_THROW(first_non_finite_kv(KvType::F32, std::vector<std::byte>(6)), Error);
}

}  // namespace
}  // namespace fluoro
