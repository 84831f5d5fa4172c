// CUDA gemm_f32 (cuBLAS) vs a float64 CPU loop.
//
// Tolerance: |cuda - exact| <= 1e-5 * sqrt(K) * sum_k |x_k * w_k| per output element. Relative
// to the sum of magnitudes rather than to the result, because cancellation can make the result
// itself tiny. fp32 accumulation error grows like sqrt(K) * 2^-24 for random data (K * 2^-24 at
// worst); 1e-5 leaves ~100x headroom over the typical case while still catching a transposed
// operand, a wrong leading dimension or TF32 (10-bit mantissa, ~1e-3 relative).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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
#include "backend/cuda/gemm.h"
#include "core/error.h"
#include "cuda_test_support.h"
#include "tensor/dequantize.h"
#include "tensor/fp16.h"

namespace fluoro::cuda {
namespace {

struct GemmShape {
    int64_t n_tok;
    int64_t n_in;
    int64_t n_out;
};

void PrintTo(const GemmShape& s, std::ostream* os) {
    *os << "[" << s.n_tok << ", " << s.n_in << "] x [" << s.n_out << ", " << s.n_in << "]^T";
}

std::string shape_name(const ::testing::TestParamInfo<GemmShape>& info) {
    std::ostringstream name;
    name << info.param.n_tok << "x" << info.param.n_in << "_by_" << info.param.n_out;
    return name.str();
}

std::vector<float> random_floats(size_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& f : v) f = dist(rng);
    return v;
}

// Checks got[n_tok, n_out] against x[n_tok, n_in] · w[n_out, n_in]ᵀ computed in float64.
void expect_matches_cpu(const std::vector<float>& x, const std::vector<float>& w,
                        const std::vector<float>& got, const GemmShape& s) {
    const double rel = 1e-5 * std::sqrt(static_cast<double>(std::max<int64_t>(s.n_in, 1)));
    size_t failures = 0;
    std::ostringstream first;
    for (int64_t t = 0; t < s.n_tok; ++t) {
        for (int64_t o = 0; o < s.n_out; ++o) {
            double sum = 0.0;
            double magnitude = 0.0;
            for (int64_t k = 0; k < s.n_in; ++k) {
                const double p = static_cast<double>(x[t * s.n_in + k]) * w[o * s.n_in + k];
                sum += p;
                magnitude += std::abs(p);
            }
            const double err = std::abs(got[t * s.n_out + o] - sum);
            if (err <= rel * magnitude) continue;
            if (failures++ < 5) {
                first << "\n  out[" << t << ", " << o << "]: CUDA " << got[t * s.n_out + o]
                      << ", exact " << sum << ", error " << err << " > " << rel * magnitude;
            }
        }
    }
    EXPECT_EQ(failures, 0u) << "outputs out of tolerance:" << first.str();
}

class CudaGemmTest : public test::CudaTest<::testing::TestWithParam<GemmShape>> {};

TEST_P(CudaGemmTest, MatchesFloat64Reference) {
    const GemmShape s = GetParam();
    std::mt19937 rng(static_cast<uint32_t>(s.n_tok * 131 + s.n_in * 17 + s.n_out));
    const std::vector<float> x = random_floats(static_cast<size_t>(s.n_tok * s.n_in), rng);
    const std::vector<float> w = random_floats(static_cast<size_t>(s.n_out * s.n_in), rng);

    DeviceBuffer<float> d_x(x.size());                                  // [n_tok, n_in]
    DeviceBuffer<float> d_w(w.size());                                  // [n_out, n_in]
    DeviceBuffer<float> d_out(static_cast<size_t>(s.n_tok * s.n_out));  // [n_tok, n_out]
    d_x.copy_from_host(x);
    d_w.copy_from_host(w);
    // Garbage in the output proves beta = 0 ignores it (and n_in == 0 writes zeros).
    FLUORO_CUDA_CHECK(cudaMemset(d_out.data(), 0x7F, d_out.bytes()));

    CublasHandle handle;
    gemm_f32(handle.get(), d_x.data(), d_w.data(), d_out.data(), s.n_tok, s.n_in, s.n_out, nullptr);
    FLUORO_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> got(d_out.size());
    d_out.copy_to_host(got);
    expect_matches_cpu(x, w, got, s);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaGemmTest,
                         ::testing::Values(GemmShape{1, 1, 1}, GemmShape{1, 32, 1},
                                           GemmShape{3, 5, 7}, GemmShape{17, 33, 65},
                                           GemmShape{1, 4096, 96}, GemmShape{64, 256, 128},
                                           GemmShape{127, 1000, 257}, GemmShape{5, 0, 3}),
                         shape_name);

// The prefill path in miniature: Q8_0 weights dequantized on the GPU, then multiplied. The
// reference uses the CPU dequantizer, so this checks the two ops compose with the same layout.
using CudaPrefillTest = test::CudaTest<>;

TEST_F(CudaPrefillTest, DequantizedQ8_0WeightsThenGemm) {
    const GemmShape s{9, 96, 40};
    const int64_t blocks_per_row = s.n_in / 32;
    std::mt19937 rng(42);
    std::uniform_int_distribution<int> quant(-128, 127);
    std::uniform_real_distribution<float> scale(0.001f, 0.02f);
    std::vector<uint8_t> w_q8(static_cast<size_t>(s.n_out * blocks_per_row) * 34);
    for (size_t b = 0; b < w_q8.size() / 34; ++b) {
        const uint16_t d = fp32_to_fp16(scale(rng));
        std::memcpy(&w_q8[b * 34], &d, 2);
        for (size_t j = 0; j < 32; ++j) w_q8[b * 34 + 2 + j] = static_cast<uint8_t>(quant(rng));
    }
    std::vector<float> w(static_cast<size_t>(s.n_out * s.n_in));  // CPU-dequantized [n_out, n_in]
    dequantize_row(GgmlType::Q8_0, w_q8.data(), w.data(), static_cast<int64_t>(w.size()));
    const std::vector<float> x = random_floats(static_cast<size_t>(s.n_tok * s.n_in), rng);

    DeviceBuffer<uint8_t> d_wq(w_q8.size());
    DeviceBuffer<float> d_w(w.size());
    DeviceBuffer<float> d_x(x.size());
    DeviceBuffer<float> d_out(static_cast<size_t>(s.n_tok * s.n_out));
    d_wq.copy_from_host(w_q8);
    d_x.copy_from_host(x);
    CublasHandle handle;
    dequantize_rows(GgmlType::Q8_0, d_wq.data(), d_w.data(), s.n_out, s.n_in, nullptr);
    gemm_f32(handle.get(), d_x.data(), d_w.data(), d_out.data(), s.n_tok, s.n_in, s.n_out, nullptr);
    FLUORO_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> got(d_out.size());
    d_out.copy_to_host(got);
    expect_matches_cpu(x, w, got, s);
}

// Shape checks happen before any cuBLAS call, so these run without a GPU too.
TEST(CudaGemmArgsTest, RejectsBadShapesWithoutTouchingTheDevice) {
    EXPECT_THROW(gemm_f32(nullptr, nullptr, nullptr, nullptr, -1, 4, 4, nullptr), Error);
    EXPECT_THROW(gemm_f32(nullptr, nullptr, nullptr, nullptr, 1, int64_t{1} << 31, 4, nullptr),
                 Error);
    EXPECT_THROW(gemm_f32(nullptr, nullptr, nullptr, nullptr, 2, 4, 4, nullptr), Error);
    EXPECT_NO_THROW(gemm_f32(nullptr, nullptr, nullptr, nullptr, 0, 4, 4, nullptr));
}

}  // namespace
}  // namespace fluoro::cuda
