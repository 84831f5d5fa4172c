// CUDA quantized matrix products (backend/cuda/cuda_matmul.h) against a host reference: double
// precision dot products of the CPU-dequantized weight rows (fluoro::dequantize_row) with x.
//
// Tolerances, relative to the magnitude s = sum_i |w_i x_i| of each output:
//   GEMV (f32 dequantize + f32 FMA):          |gpu - ref| <= 1e-4 * s + 1e-6
//   GEMM (F16 weights and x, f32 accumulate): |gpu - ref| <= 3e-3 * s + 1e-5
//   (BF16 and F32 weights take an f32 cuBLAS path and meet the GEMM bound easily.)
// get_rows must equal the CPU dequantization within 1 ulp (it uses the same operation order
// with non-contracted multiplies/adds; 1 ulp covers a CPU build that contracts into FMA).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_matmul.h"
#include "backend/cuda/device_buffer.h"
#include "core/error.h"
#include "cuda_test_support.h"
#include "tensor/dequantize.h"
#include "tensor/fp16.h"
#include "tensor/ggml_type.h"
#include "tensor/quantize.h"

namespace fluoro::cuda {
namespace {

size_t bytes_per_row(GgmlType type, int64_t n_in) {
    const auto b = row_bytes(type, static_cast<uint64_t>(n_in));
    if (!b) throw Error("test: bad row length");
    return static_cast<size_t>(*b);
}

void put_half(uint8_t* p, float v) {
    const uint16_t h = fp32_to_fp16(v);
    std::memcpy(p, &h, sizeof h);
}

// A random nonzero scale with magnitude in [lo, hi] and a random sign.
float random_scale(std::mt19937& rng, float lo, float hi) {
    std::uniform_real_distribution<float> mag(lo, hi);
    std::bernoulli_distribution neg(0.5);
    const float v = mag(rng);
    return neg(rng) ? -v : v;
}

// n_out rows of `type`: quantized random floats where the CPU can quantize the type, otherwise
// (k-quants, MXFP4, IQ4_XS) random bytes with sane scale fields.
std::vector<uint8_t> make_weights(GgmlType type, int64_t n_out, int64_t n_in, std::mt19937& rng) {
    const size_t rb = bytes_per_row(type, n_in);
    std::vector<uint8_t> w(rb * static_cast<size_t>(n_out));
    const TypeTraits& tr = type_traits(type);
    if (tr.quantize) {
        std::normal_distribution<float> dist(0.0f, 0.5f);
        std::vector<float> row(static_cast<size_t>(n_in));
        for (int64_t r = 0; r < n_out; ++r) {
            for (auto& v : row) v = dist(rng);
            quantize_row(type, row.data(), w.data() + static_cast<size_t>(r) * rb, n_in);
        }
        return w;
    }
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& b : w) b = static_cast<uint8_t>(byte(rng));
    const size_t n_blocks = w.size() / tr.block_bytes;
    for (size_t i = 0; i < n_blocks; ++i) {
        uint8_t* blk = w.data() + i * tr.block_bytes;
        switch (type) {
            case GgmlType::Q4_K:
            case GgmlType::Q5_K:
                put_half(blk, random_scale(rng, 0.002f, 0.02f));      // d
                put_half(blk + 2, random_scale(rng, 0.002f, 0.02f));  // dmin
                break;
            case GgmlType::Q6_K:
                put_half(blk + 208, random_scale(rng, 0.0005f, 0.005f));
                break;
            case GgmlType::MXFP4:  // E8M0 scale 2^(e - 128) in [2^-8, 2^-4]: |x| <= 0.75
                blk[0] = static_cast<uint8_t>(std::uniform_int_distribution<int>(120, 124)(rng));
                break;
            case GgmlType::IQ4_XS:  // d; the random 6-bit scales span ±32, levels ±127
                put_half(blk, random_scale(rng, 0.00002f, 0.0002f));
                break;
            default:
                throw Error("test: no generator for " + std::string(type_name(type)));
        }
    }
    return w;
}

std::vector<float> random_x(int64_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = dist(rng);
    return x;
}

// The CPU dequantization of all rows.
std::vector<float> dequantize_all(GgmlType type, const std::vector<uint8_t>& w, int64_t n_out,
                                  int64_t n_in) {
    const size_t rb = bytes_per_row(type, n_in);
    std::vector<float> out(static_cast<size_t>(n_out * n_in));
    for (int64_t r = 0; r < n_out; ++r) {
        dequantize_row(type, w.data() + static_cast<size_t>(r) * rb, out.data() + r * n_in, n_in);
    }
    return out;
}

enum class Path { kGemv, kGemm, kAuto };

const char* path_name(Path p) {
    return p == Path::kGemv ? "GEMV" : (p == Path::kGemm ? "GEMM" : "run()");
}

// Runs one product on the GPU and compares every output with the double reference.
void check_product(Matmul& mm, GgmlType type, int64_t n_out, int64_t n_in, int64_t n_tok, Path path,
                   uint32_t seed) {
    std::mt19937 rng(seed);
    const std::vector<uint8_t> w = make_weights(type, n_out, n_in, rng);
    const std::vector<float> x = random_x(n_tok * n_in, rng);
    const std::vector<float> wf = dequantize_all(type, w, n_out, n_in);
    const size_t rb = bytes_per_row(type, n_in);

    DeviceBuffer<uint8_t> d_w(w.size());
    d_w.copy_from_host(w);
    DeviceBuffer<float> d_x(x.size());
    d_x.copy_from_host(x);
    const auto n_y = static_cast<size_t>(n_tok * n_out);
    DeviceBuffer<float> d_y(n_y);
    // NaN fill: an output the kernel forgets to write fails loudly.
    FLUORO_CUDA_CHECK(cudaMemset(d_y.data(), 0xFF, d_y.bytes()));

    switch (path) {
        case Path::kGemv:
            mm.run_gemv(type, d_w.data(), rb, n_in, n_out, d_x.data(), n_tok, d_y.data());
            break;
        case Path::kGemm:
            mm.run_gemm(type, d_w.data(), rb, n_in, n_out, d_x.data(), n_tok, d_y.data());
            break;
        case Path::kAuto:
            mm.run(type, d_w.data(), rb, n_in, n_out, d_x.data(), n_tok, d_y.data());
            break;
    }
    FLUORO_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> y(n_y);
    d_y.copy_to_host(y);

    const bool gemm_numerics =
        path == Path::kGemm || (path == Path::kAuto && n_tok > kGemvMaxTokens);
    const double rel = gemm_numerics ? 3e-3 : 1e-4;
    const double abs_tol = gemm_numerics ? 1e-5 : 1e-6;

    size_t bad = 0;
    std::ostringstream first;
    for (int64_t t = 0; t < n_tok; ++t) {
        const float* xt = x.data() + t * n_in;
        for (int64_t o = 0; o < n_out; ++o) {
            const float* wo = wf.data() + o * n_in;
            double ref = 0.0, mag = 0.0;
            for (int64_t i = 0; i < n_in; ++i) {
                const double p = static_cast<double>(wo[i]) * static_cast<double>(xt[i]);
                ref += p;
                mag += std::fabs(p);
            }
            const double got = y[static_cast<size_t>(t * n_out + o)];
            const double tol = rel * mag + abs_tol;
            if (!(std::fabs(got - ref) <= tol)) {
                if (bad++ < 5) {
                    first << "\n  y[tok " << t << ", out " << o << "]: gpu " << got << ", ref "
                          << ref << ", |diff| " << std::fabs(got - ref) << " > tol " << tol
                          << " (sum|w*x| " << mag << ")";
                }
            }
        }
    }
    EXPECT_EQ(bad, 0u) << path_name(path) << " " << type_name(type) << " W[" << n_out << " x "
                       << n_in << "] n_tok " << n_tok << ": " << bad << " of " << n_y
                       << " outputs out of tolerance:" << first.str();
}

int64_t small_in(GgmlType t) {
    return type_traits(t).block_elems == 256 ? 256 : 576;
}
int64_t mid_in(GgmlType t) {
    return type_traits(t).block_elems == 256 ? 1536 : 640;
}
int64_t big_in(GgmlType t) {
    return type_traits(t).block_elems == 256 ? 2048 : 1536;
}

class CudaMatmul : public test::CudaTest<> {
  protected:
    void check_gemv(GgmlType type) {
        Matmul mm(nullptr);
        uint32_t seed = 1000 + static_cast<uint32_t>(type);
        for (const int64_t n_tok : {1, 2, 3, 8}) {
            check_product(mm, type, 67, small_in(type), n_tok, Path::kGemv, seed++);
            check_product(mm, type, 1000, big_in(type), n_tok, Path::kGemv, seed++);
        }
        check_product(mm, type, 5, mid_in(type), 1, Path::kGemv, seed++);
        check_product(mm, type, 131, mid_in(type), 5, Path::kGemv, seed++);
        check_product(mm, type, 33, small_in(type), 11, Path::kGemv, seed++);  // 2 launches
    }
    void check_gemm(GgmlType type) {
        Matmul mm(nullptr);
        uint32_t seed = 2000 + static_cast<uint32_t>(type);
        check_product(mm, type, 67, small_in(type), 9, Path::kGemm, seed++);
        check_product(mm, type, 1000, big_in(type), 64, Path::kGemm, seed++);
        check_product(mm, type, 67, mid_in(type), 512, Path::kGemm, seed++);
        check_product(mm, type, 3, small_in(type), 2, Path::kGemm, seed++);
    }
};

#define FLUORO_MATMUL_TESTS(T)                   \
    TEST_F(CudaMatmul, Gemv##T##MatchesCpu) {    \
        check_gemv(GgmlType::T);                 \
    }                                            \
    TEST_F(CudaMatmul, Gemm##T##MatchesCpu) {    \
        check_gemm(GgmlType::T);                 \
    }                                            \
    TEST_F(CudaMatmul, GetRows##T##MatchesCpu) { \
        check_get_rows(GgmlType::T);             \
    }

void check_get_rows(GgmlType type) {
    const int64_t n_table = 37;
    const int64_t row_len = small_in(type);
    std::mt19937 rng(3000 + static_cast<uint32_t>(type));
    const std::vector<uint8_t> w = make_weights(type, n_table, row_len, rng);
    const std::vector<float> wf = dequantize_all(type, w, n_table, row_len);
    const std::vector<int32_t> ids = {0, 36, 5, 5, -1, 37, 12, 1000000, 20};
    const auto n = static_cast<int64_t>(ids.size());

    DeviceBuffer<uint8_t> d_w(w.size());
    d_w.copy_from_host(w);
    DeviceBuffer<int32_t> d_ids(ids.size());
    d_ids.copy_from_host(ids);
    DeviceBuffer<float> d_y(static_cast<size_t>(n * row_len));
    FLUORO_CUDA_CHECK(cudaMemset(d_y.data(), 0xFF, d_y.bytes()));
    get_rows(type, d_w.data(), bytes_per_row(type, row_len), row_len, n_table, d_ids.data(), n,
             d_y.data(), nullptr);
    FLUORO_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> y(d_y.size());
    d_y.copy_to_host(y);

    size_t bad = 0;
    std::ostringstream first;
    for (int64_t i = 0; i < n; ++i) {
        const int32_t id = ids[static_cast<size_t>(i)];
        const bool valid = id >= 0 && id < n_table;
        for (int64_t j = 0; j < row_len; ++j) {
            const float want = valid ? wf[static_cast<size_t>(id * row_len + j)] : 0.0f;
            const float got = y[static_cast<size_t>(i * row_len + j)];
            const auto a = static_cast<int64_t>(std::bit_cast<int32_t>(want));
            const auto b = static_cast<int64_t>(std::bit_cast<int32_t>(got));
            // 1 ulp for same-sign finite values; zeros of either sign are equal.
            const bool ok = (want == 0.0f && got == 0.0f) ||
                            ((a < 0) == (b < 0) && std::abs(a - b) <= 1 && !std::isnan(got));
            if (!ok && bad++ < 5) {
                first << "\n  out row " << i << " (id " << id << "), col " << j << ": gpu " << got
                      << " (0x" << std::hex << std::bit_cast<uint32_t>(got) << "), cpu " << want
                      << " (0x" << std::bit_cast<uint32_t>(want) << std::dec << ")";
            }
        }
    }
    EXPECT_EQ(bad, 0u) << "get_rows " << type_name(type) << " table [" << n_table << " x "
                       << row_len << "]: " << bad
                       << " elements differ by more than 1 ulp:" << first.str();
}

FLUORO_MATMUL_TESTS(F32)
FLUORO_MATMUL_TESTS(F16)
FLUORO_MATMUL_TESTS(BF16)
FLUORO_MATMUL_TESTS(Q4_0)
FLUORO_MATMUL_TESTS(Q4_1)
FLUORO_MATMUL_TESTS(Q5_0)
FLUORO_MATMUL_TESTS(Q5_1)
FLUORO_MATMUL_TESTS(Q8_0)
FLUORO_MATMUL_TESTS(Q4_K)
FLUORO_MATMUL_TESTS(Q5_K)
FLUORO_MATMUL_TESTS(Q6_K)
FLUORO_MATMUL_TESTS(MXFP4)
FLUORO_MATMUL_TESTS(IQ4_XS)

// Float weights with a row length that is no multiple of anything (the plain-type GEMV path).
TEST_F(CudaMatmul, GemvF16OddRowLengthMatchesCpu) {
    Matmul mm(nullptr);
    check_product(mm, GgmlType::F16, 19, 77, 3, Path::kGemv, 4001);
    check_product(mm, GgmlType::BF16, 19, 77, 1, Path::kGemv, 4002);
    check_product(mm, GgmlType::F32, 19, 77, 9, Path::kGemm, 4003);
}

// run() picks GEMV up to kGemvMaxTokens and GEMM above; both give right answers.
TEST_F(CudaMatmul, RunDispatchesByTokenCount) {
    Matmul mm(nullptr);
    check_product(mm, GgmlType::Q4_K, 100, 512, kGemvMaxTokens, Path::kAuto, 4101);
    check_product(mm, GgmlType::Q4_K, 100, 512, kGemvMaxTokens + 1, Path::kAuto, 4102);
    check_product(mm, GgmlType::Q8_0, 100, 576, 1, Path::kAuto, 4103);
}

// run_many (one launch for outputs of one type) gives each output exactly what run() gives it:
// q/k/v of one type, Gemma's mixed q5_0/q5_0/q8_0 (two launches), gate/up, a float weight
// among them, and a batch too large for the GEMV (one GEMM each).
TEST_F(CudaMatmul, RunManyEqualsOneRunPerOutput) {
    Matmul mm(nullptr);
    struct Case {
        std::vector<std::pair<GgmlType, int64_t>> outs;  // type, n_out
        int64_t n_in, n_tok;
    };
    const std::vector<Case> cases = {
        {{{GgmlType::Q4_1, 576}, {GgmlType::Q4_1, 192}, {GgmlType::Q4_1, 192}}, 576, 1},
        {{{GgmlType::Q5_0, 1024}, {GgmlType::Q5_0, 256}, {GgmlType::Q8_0, 256}}, 640, 1},
        {{{GgmlType::Q4_K, 300}, {GgmlType::Q4_K, 77}}, 512, 3},
        {{{GgmlType::Q8_0, 64}, {GgmlType::F16, 64}, {GgmlType::Q8_0, 65}}, 96, 8},
        {{{GgmlType::Q4_1, 100}, {GgmlType::Q4_1, 50}}, 64, 20},
    };
    uint32_t seed = 4200;
    for (const Case& c : cases) {
        std::mt19937 rng(seed++);
        const std::vector<float> x = random_x(c.n_in * c.n_tok, rng);
        DeviceBuffer<float> d_x(x.size());
        d_x.copy_from_host(x);
        std::vector<DeviceBuffer<uint8_t>> ws;
        std::vector<DeviceBuffer<float>> y_many, y_one;
        std::vector<Matmul::Output> outs;
        for (const auto& [type, n_out] : c.outs) {
            const std::vector<uint8_t> w = make_weights(type, n_out, c.n_in, rng);
            ws.emplace_back(w.size());
            ws.back().copy_from_host(w);
            y_many.emplace_back(static_cast<size_t>(n_out * c.n_tok));
            y_one.emplace_back(static_cast<size_t>(n_out * c.n_tok));
        }
        for (size_t j = 0; j < c.outs.size(); ++j) {
            const auto [type, n_out] = c.outs[j];
            outs.push_back(
                {type, ws[j].data(), bytes_per_row(type, c.n_in), n_out, y_many[j].data()});
            mm.run(type, ws[j].data(), bytes_per_row(type, c.n_in), c.n_in, n_out, d_x.data(),
                   c.n_tok, y_one[j].data());
        }
        mm.run_many(outs, c.n_in, d_x.data(), c.n_tok);
        FLUORO_CUDA_CHECK(cudaDeviceSynchronize());
        for (size_t j = 0; j < c.outs.size(); ++j) {
            std::vector<float> a(y_many[j].size()), b(y_one[j].size());
            y_many[j].copy_to_host(a);
            y_one[j].copy_to_host(b);
            EXPECT_EQ(a, b) << "case " << seed - 4201 << " output " << j << " ("
                            << type_name(c.outs[j].first) << ")";
        }
    }
}

// A reservation up front, then GEMMs that fit in it, leave the scratch as it was.
TEST_F(CudaMatmul, ReserveCoversLaterGemms) {
    Matmul mm(nullptr);
    mm.reserve(512, 2048, 1000 * 2048);
    const size_t reserved = mm.scratch_bytes();
    EXPECT_GE(reserved, size_t{1000} * 2048 * 2 + size_t{512} * 2048 * 2);
    check_product(mm, GgmlType::Q6_K, 1000, 2048, 64, Path::kGemm, 4201);
    check_product(mm, GgmlType::Q4_0, 300, 1536, 300, Path::kGemm, 4202);
    EXPECT_EQ(mm.scratch_bytes(), reserved);
}

TEST_F(CudaMatmul, UnsupportedTypeThrows) {
    Matmul mm(nullptr);
    DeviceBuffer<float> d_x(256), d_y(4);
    DeviceBuffer<uint8_t> d_w(4 * 256);
    EXPECT_FALSE(can_matmul(GgmlType::Q2_K));
    EXPECT_FALSE(can_matmul(GgmlType::IQ4_NL));
    EXPECT_TRUE(can_matmul(GgmlType::Q6_K));
    try {
        mm.run(GgmlType::Q2_K, d_w.data(), 84, 256, 4, d_x.data(), 1, d_y.data());
        FAIL() << "Q2_K should throw UnsupportedError";
    } catch (const UnsupportedError& e) {
        EXPECT_NE(std::string(e.what()).find("q2_K"), std::string::npos) << e.what();
    }
    EXPECT_THROW(mm.run_gemm(GgmlType::IQ4_NL, d_w.data(), 18, 32, 4, d_x.data(), 9, d_y.data()),
                 UnsupportedError);
}

TEST_F(CudaMatmul, BadShapeThrows) {
    Matmul mm(nullptr);
    DeviceBuffer<float> d_x(1024), d_y(16);
    DeviceBuffer<uint8_t> d_w(4096);
    // n_in not a multiple of the block.
    try {
        mm.run(GgmlType::Q4_K, d_w.data(), 144, 100, 4, d_x.data(), 1, d_y.data());
        FAIL() << "n_in 100 for Q4_K should throw";
    } catch (const UnsupportedError& e) {
        FAIL() << "wrong error type: " << e.what();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("100"), std::string::npos) << e.what();
    }
    EXPECT_THROW(mm.run(GgmlType::Q8_0, d_w.data(), 34, 33, 4, d_x.data(), 9, d_y.data()), Error);
    // row_bytes too small for the row.
    EXPECT_THROW(mm.run(GgmlType::Q8_0, d_w.data(), 30, 32, 4, d_x.data(), 1, d_y.data()), Error);
}

// Argument checks come before any CUDA call, so these run without a GPU too.
TEST(CudaGetRowsArgs, RejectsUnsupportedTypesAndBadShapes) {
    EXPECT_THROW(get_rows(GgmlType::Q2_K, nullptr, 84, 256, 1, nullptr, 1, nullptr, nullptr),
                 UnsupportedError);
    EXPECT_THROW(get_rows(GgmlType::Q4_K, nullptr, 144, 100, 1, nullptr, 1, nullptr, nullptr),
                 Error);
}

}  // namespace
}  // namespace fluoro::cuda
