// The SIMD activation converters (backend/cpu/kernels/quantize_partner.h) against the reference
// quantize_row(): identical bytes for Q8_0, Q8_1 and Q8_K on every instruction set, over random
// rows and the cases that trip SIMD rounding and reductions: exact halves (roundf rounds them away
// from zero, the nearest-even default of cvtps2dq would not), ties for the largest magnitude with
// either sign first, all-zero and constant blocks, tiny and huge scales, inf and NaN.
#include "backend/cpu/kernels/quantize_partner.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/backend/kernel_test_support.h"
#include "tensor/quantize.h"

namespace fluoro::cpu {
namespace {

constexpr GgmlType kPartners[] = {GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K, GgmlType::F16,
                                  GgmlType::BF16};

// Rows of 512 (two Q8_K blocks, 16 legacy blocks) covering the awkward cases block by block.
std::vector<std::vector<float>> test_rows() {
    std::mt19937 rng(31337);
    std::vector<std::vector<float>> rows;
    for (float scale : {1.0f, 1e-3f, 1e3f, 1e-30f, 1e30f})
        rows.push_back(test::random_floats(512, rng, scale));
    // Exact halves after scaling: amax 127 makes id = 1, so x = k + 0.5 is a tie.
    std::vector<float> halves(512);
    for (size_t i = 0; i < halves.size(); ++i)
        halves[i] = i % 32 == 0 ? 127.0f : float(int(i % 64) - 32) + 0.5f;
    rows.push_back(halves);
    for (float& v : halves) v = -v;
    rows.push_back(halves);
    // Largest magnitude twice with opposite signs, in both orders.
    std::vector<float> ties = test::random_floats(512, rng);
    ties[3] = 7.0f, ties[100] = -7.0f, ties[300] = -7.0f, ties[400] = 7.0f;
    rows.push_back(ties);
    rows.push_back(std::vector<float>(512, 0.0f));
    rows.push_back(std::vector<float>(512, -2.5f));
    // Non-finite and tiny values in some blocks, normal values elsewhere.
    std::vector<float> odd = test::random_floats(512, rng);
    odd[5] = std::numeric_limits<float>::infinity();
    odd[40] = std::numeric_limits<float>::quiet_NaN();
    odd[300] = -std::numeric_limits<float>::infinity();
    for (int i = 64; i < 96; ++i) odd[i] = 1e-40f * float(i - 80);  // subnormals
    for (int i = 96; i < 128; ++i) odd[i] = FLT_MIN * float(i - 110);
    for (int i = 128; i < 160; ++i) odd[i] = FLT_MAX * (i % 2 ? 0.9f : -0.7f);
    rows.push_back(odd);
    return rows;
}

TEST(CpuKernelQuantize, PartnerRowsEqualTheReferenceOnEveryIsa) {
    const auto rows = test_rows();
    for (CpuIsa isa : test::supported_isas()) {
        for (GgmlType partner : kPartners) {
            for (size_t r = 0; r < rows.size(); ++r) {
                const auto n = static_cast<int64_t>(rows[r].size());
                const size_t bytes = *row_bytes(partner, static_cast<uint64_t>(n));
                std::vector<uint8_t> want(bytes), got(bytes, 0xAB);
                quantize_row(partner, rows[r].data(), want.data(), n);
                quantize_partner_row(partner, rows[r].data(), got.data(), n, isa);
                EXPECT_EQ(got, want)
                    << type_name(partner) << " " << cpu_isa_name(isa) << " row " << r;
            }
        }
    }
}

TEST(CpuKernelQuantize, ManyRandomRowsAndUnalignedOutput) {
    std::mt19937 rng(8);
    for (CpuIsa isa : test::supported_isas()) {
        for (GgmlType partner : {GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K}) {
            for (int trial = 0; trial < 200; ++trial) {
                const int64_t n = 256 * (1 + trial % 8);
                const std::vector<float> x = test::random_floats(n, rng, trial % 3 ? 1.0f : 40.0f);
                const size_t bytes = *row_bytes(partner, static_cast<uint64_t>(n));
                std::vector<uint8_t> want(bytes), got(bytes + 1);
                quantize_row(partner, x.data(), want.data(), n);
                quantize_partner_row(partner, x.data(), got.data() + 1, n, isa);  // odd address
                ASSERT_TRUE(std::equal(want.begin(), want.end(), got.begin() + 1))
                    << type_name(partner) << " " << cpu_isa_name(isa) << " trial " << trial;
            }
        }
    }
}

TEST(CpuKernelQuantize, BadLengthsThrowLikeTheReference) {
    std::vector<float> x(300);
    std::vector<uint8_t> out(4096);
    for (CpuIsa isa : test::supported_isas()) {
        EXPECT_THROW(quantize_partner_row(GgmlType::Q8_0, x.data(), out.data(), 33, isa), Error);
        EXPECT_THROW(quantize_partner_row(GgmlType::Q8_K, x.data(), out.data(), 255, isa), Error);
    }
}

}  // namespace
}  // namespace fluoro::cpu
