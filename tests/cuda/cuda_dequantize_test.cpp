// CUDA dequantize_rows vs the CPU reference fluoro::dequantize_row, bit for bit.
//
// Why exact equality is the right tolerance: each element is one fp16->fp32 conversion (exact on
// both sides: every fp16 value, subnormals included, is representable in fp32), an int->float
// conversion (exact: |q| <= 128), then one multiply (Q8_0) or a multiply and an add (Q4_1), each
// correctly rounded to fp32 in IEEE round-to-nearest-even. The kernel uses __fmul_rn/__fadd_rn,
// which nvcc never contracts into an FMA; the CPU reference is built for baseline x86-64 (no FMA
// instruction to contract into). If the CPU build ever enables FMA contraction (-march=native),
// Q4_1 may differ by 1 ulp of q*d+m and this test should then allow 1 ulp for Q4_1.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/dequantize.h"
#include "backend/cuda/device_buffer.h"
#include "core/error.h"
#include "cuda_test_support.h"
#include "tensor/dequantize.h"
#include "tensor/fp16.h"
#include "tensor/ggml_type.h"

namespace fluoro::cuda {
namespace {

constexpr int kBlockElems = 32;

// fp16 bit patterns worth covering besides random scales: zero, negative zero, the smallest
// subnormal, the largest subnormal, the largest finite value, a negative normal.
constexpr uint16_t kSpecialHalves[] = {0x0000, 0x8000, 0x0001, 0x03FF, 0x7BFF, 0xBC00};

void put_half(std::vector<uint8_t>& bytes, size_t offset, uint16_t half) {
    std::memcpy(bytes.data() + offset, &half, sizeof half);  // ggml files are little-endian
}

// n_blocks random blocks of `type` (Q8_0 or Q4_1): random quants, scales drawn as floats and
// rounded with the CPU's fp32_to_fp16; the first blocks take the special fp16 patterns.
std::vector<uint8_t> random_blocks(GgmlType type, int64_t n_blocks, std::mt19937& rng) {
    const TypeTraits& traits = type_traits(type);
    std::vector<uint8_t> bytes(static_cast<size_t>(n_blocks) * traits.block_bytes);
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& b : bytes) b = static_cast<uint8_t>(byte(rng));

    std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
    std::uniform_real_distribution<float> minimum(-1.0f, 1.0f);
    const size_t n_special = std::size(kSpecialHalves);
    for (int64_t i = 0; i < n_blocks; ++i) {
        const size_t at = static_cast<size_t>(i) * traits.block_bytes;
        const auto u = static_cast<size_t>(i);
        const uint16_t d = u < n_special ? kSpecialHalves[u] : fp32_to_fp16(scale(rng));
        put_half(bytes, at, d);
        if (type == GgmlType::Q4_1) {
            const uint16_t m =
                u < n_special ? kSpecialHalves[n_special - 1 - u] : fp32_to_fp16(minimum(rng));
            put_half(bytes, at + 2, m);
        }
    }
    return bytes;
}

struct DequantizeCase {
    GgmlType type;
    int64_t n_rows;
    int64_t row_len;
};

void PrintTo(const DequantizeCase& c, std::ostream* os) {
    *os << type_name(c.type) << " [" << c.n_rows << ", " << c.row_len << "]";
}

std::string case_name(const ::testing::TestParamInfo<DequantizeCase>& info) {
    std::ostringstream name;
    name << type_name(info.param.type) << "_" << info.param.n_rows << "x" << info.param.row_len;
    return name.str();
}

class CudaDequantizeTest : public test::CudaTest<::testing::TestWithParam<DequantizeCase>> {};

TEST_P(CudaDequantizeTest, MatchesCpuBitForBit) {
    const auto [type, n_rows, row_len] = GetParam();
    const TypeTraits& traits = type_traits(type);
    const int64_t blocks_per_row = row_len / kBlockElems;
    const auto n_elems = static_cast<size_t>(n_rows * row_len);
    const size_t row_bytes = static_cast<size_t>(blocks_per_row) * traits.block_bytes;

    std::mt19937 rng(static_cast<uint32_t>(n_rows * 7919 + row_len));
    const std::vector<uint8_t> src = random_blocks(type, n_rows * blocks_per_row, rng);

    // expected[n_rows, row_len]: the CPU reference, row by row.
    std::vector<float> expected(n_elems);
    for (int64_t r = 0; r < n_rows; ++r) {
        dequantize_row(type, src.data() + static_cast<size_t>(r) * row_bytes,
                       expected.data() + r * row_len, row_len);
    }

    DeviceBuffer<uint8_t> d_src(src.size());
    d_src.copy_from_host(src);
    DeviceBuffer<float> d_dst(n_elems);
    dequantize_rows(type, d_src.data(), d_dst.data(), n_rows, row_len, nullptr);
    FLUORO_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> got(n_elems);
    d_dst.copy_to_host(got);

    size_t mismatches = 0;
    std::ostringstream first;
    for (size_t i = 0; i < n_elems; ++i) {
        if (std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(expected[i])) continue;
        if (mismatches++ < 5) {
            first << "\n  element " << i << " (row " << i / row_len << ", col " << i % row_len
                  << "): CUDA " << got[i] << ", CPU " << expected[i];
        }
    }
    EXPECT_EQ(mismatches, 0u) << "of " << n_elems << " elements differ:" << first.str();
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaDequantizeTest,
                         ::testing::Values(DequantizeCase{GgmlType::Q8_0, 1, 32},
                                           DequantizeCase{GgmlType::Q8_0, 3, 64},
                                           DequantizeCase{GgmlType::Q8_0, 5, 32 * 37},
                                           DequantizeCase{GgmlType::Q8_0, 257, 4096},
                                           DequantizeCase{GgmlType::Q4_1, 1, 32},
                                           DequantizeCase{GgmlType::Q4_1, 3, 64},
                                           DequantizeCase{GgmlType::Q4_1, 5, 32 * 37},
                                           DequantizeCase{GgmlType::Q4_1, 257, 4096}),
                         case_name);

// Argument checks happen before any CUDA call, so these run without a GPU too.
TEST(CudaDequantizeArgsTest, RejectsUnsupportedTypes) {
    EXPECT_THROW(dequantize_rows(GgmlType::Q4_0, nullptr, nullptr, 1, 32, nullptr),
                 UnsupportedError);
    EXPECT_THROW(dequantize_rows(GgmlType::Q6_K, nullptr, nullptr, 1, 256, nullptr),
                 UnsupportedError);
    EXPECT_FALSE(can_dequantize(GgmlType::F16));
    EXPECT_TRUE(can_dequantize(GgmlType::Q8_0));
    EXPECT_TRUE(can_dequantize(GgmlType::Q4_1));
}

TEST(CudaDequantizeArgsTest, RejectsBadShapes) {
    EXPECT_THROW(dequantize_rows(GgmlType::Q8_0, nullptr, nullptr, 1, 33, nullptr), Error);
    EXPECT_THROW(dequantize_rows(GgmlType::Q4_1, nullptr, nullptr, -1, 32, nullptr), Error);
    EXPECT_THROW(dequantize_rows(GgmlType::Q8_0, nullptr, nullptr, 2, 64, nullptr), Error);
    EXPECT_NO_THROW(dequantize_rows(GgmlType::Q8_0, nullptr, nullptr, 0, 64, nullptr));
}

}  // namespace
}  // namespace fluoro::cuda
