// The CPU matmul (backend/cpu/matmul.h) against a naive loop over vec_dot: for every weight type,
// the model widths, token counts 1/3/17/64 (tiles of 8 plus remainders), row counts that are not
// a multiple of the row chunk, and 1-3 threads, the result must be bit-identical (the tiled path
// accumulates each token's blocks in the same order as a single-row dot). Also: a reserved
// scratch is never reallocated, padded row strides, F32 weights against float64, and errors.
#include "backend/cpu/matmul.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <list>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/kernels/interleave.h"
#include "backend/cpu/kernels/vec_dot.h"
#include "core/error.h"
#include "engine/backend/kernel_test_support.h"

namespace fluoro::cpu {
namespace {

using test::kDotWeightTypes;

std::string name(GgmlType t) {
    return std::string(type_name(t));
}

// n_out random rows of n_in weights, row_stride bytes apart.
struct Matrix {
    WeightView view;
    std::vector<uint8_t> bytes;
};

Matrix random_matrix(GgmlType type, int64_t n_in, int64_t n_out, std::mt19937& rng,
                     size_t padding = 0) {
    const size_t row = *row_bytes(type, n_in);
    const size_t stride = row + padding;
    Matrix m;
    m.bytes.resize(stride * n_out);
    for (int64_t o = 0; o < n_out; ++o) {
        const std::vector<uint8_t> r = test::random_weight_row(type, n_in, rng);
        std::memcpy(m.bytes.data() + o * stride, r.data(), row);
    }
    m.view = WeightView{type, n_in, n_out, m.bytes.data(), stride};
    return m;
}

// y[t*n_out + o] = vec_dot(W[o], partner(x_t)): the definition matmul must reproduce.
std::vector<float> naive_matmul(const WeightView& w, const std::vector<float>& x, int64_t n_tok) {
    const GgmlType partner = vec_dot_partner(w.type);
    std::vector<uint8_t> xq(*row_bytes(partner, w.n_in));
    std::vector<float> y(n_tok * w.n_out);
    for (int64_t t = 0; t < n_tok; ++t) {
        quantize_row(partner, x.data() + t * w.n_in, xq.data(), w.n_in);
        for (int64_t o = 0; o < w.n_out; ++o) {
            const auto* row = static_cast<const uint8_t*>(w.data) + o * w.row_bytes;
            y[t * w.n_out + o] = vec_dot(w.type, row, xq.data(), w.n_in);
        }
    }
    return y;
}

int count_bit_mismatches(const std::vector<float>& got, const std::vector<float>& want,
                         const std::string& what) {
    int mismatches = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        if (std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(want[i])) continue;
        if (++mismatches <= 3)
            ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", want " << want[i];
    }
    return mismatches;
}

class CpuMatmulTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        for (int n = 1; n <= 3; ++n) pools_.push_back(std::make_unique<ThreadPool>(n));
    }
    static void TearDownTestSuite() { pools_.clear(); }
    static std::vector<std::unique_ptr<ThreadPool>> pools_;  // 1, 2 and 3 threads
};
std::vector<std::unique_ptr<ThreadPool>> CpuMatmulTest::pools_;

TEST_F(CpuMatmulTest, EqualsNaiveVecDotLoopForAllTypesShapesAndThreadCounts) {
    std::mt19937 rng(2024);
    MatmulScratch scratch;
    for (GgmlType type : kDotWeightTypes) {
        for (int64_t n_in : {576, 640, 1536, 2048}) {
            if (n_in % type_traits(type).block_elems != 0) continue;  // k-quants: 1536, 2048
            const Matrix w = random_matrix(type, n_in, 37, rng);      // chunks of 16: 16+16+5
            for (int64_t n_tok : {1, 3, 17, 64}) {
                const std::vector<float> x = test::random_floats(n_tok * n_in, rng);
                const std::vector<float> want = naive_matmul(w.view, x, n_tok);
                for (const auto& pool : pools_) {
                    std::vector<float> y(want.size(), -1.0f);
                    matmul(*pool, w.view, x.data(), n_tok, y.data(), scratch);
                    const std::string what = name(type) + " n_in=" + std::to_string(n_in) +
                                             " n_tok=" + std::to_string(n_tok) +
                                             " threads=" + std::to_string(pool->size());
                    EXPECT_EQ(count_bit_mismatches(y, want, what), 0) << what;
                }
            }
        }
    }
}

// Interleaved Q4_1, Q5_0, Q8_0, Q4_K and Q6_K rows (kernels/interleave.h): within rounding of the
// GGUF layout's result, and each token's outputs the same bits whatever the token count and
// thread count.
TEST_F(CpuMatmulTest, InterleavedRowsAgreeAndAreBatchInvariant) {
    for (GgmlType type :
         {GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
        if (!row_group_dot_fn(type)) GTEST_SKIP() << "no row-group kernel on this CPU or build";
        std::mt19937 rng(31);
        MatmulScratch scratch;
        // 25 groups: chunks of 16 rows and a ragged last; whole 256-element super-blocks for K
        const int64_t n_in = type == GgmlType::Q4_K || type == GgmlType::Q6_K ? 768 : 576;
        const int64_t n_out = 200;
        const Matrix w = random_matrix(type, n_in, n_out, rng);
        std::vector<uint8_t> groups(w.bytes.size());
        interleave_rows(type, w.bytes.data(), n_out, n_in, groups.data());
        WeightView view = w.view;
        view.data = groups.data();
        view.interleaved = true;
        const int64_t max_tok = 19;
        const std::vector<float> x = test::random_floats(max_tok * n_in, rng);
        const std::vector<float> rows_y = naive_matmul(w.view, x, max_tok);
        std::vector<float> one_by_one(max_tok * n_out);
        for (int64_t t = 0; t < max_tok; ++t)
            matmul(*pools_[0], view, x.data() + t * n_in, 1, one_by_one.data() + t * n_out,
                   scratch);
        for (int64_t i = 0; i < max_tok * n_out; ++i)
            EXPECT_NEAR(one_by_one[i], rows_y[i], 1e-4f * (1.0f + std::fabs(rows_y[i]))) << i;
        for (int64_t n_tok : {2, 5, 8, 19}) {
            for (const auto& pool : pools_) {
                std::vector<float> y(n_tok * n_out, -1.0f);
                matmul(*pool, view, x.data(), n_tok, y.data(), scratch);
                const std::vector<float> want(one_by_one.begin(),
                                              one_by_one.begin() + n_tok * n_out);
                const std::string what = "interleaved " + name(type) +
                                         " n_tok=" + std::to_string(n_tok) +
                                         " threads=" + std::to_string(pool->size());
                EXPECT_EQ(count_bit_mismatches(y, want, what), 0) << what;
            }
        }
    }
}

// matmul_many: one conversion and one parallel region where the activation formats agree (Q4_1
// with Q5_1; Q4_K with Q6_K; interleaved Q5_0 with interleaved Q8_0), one matmul each where they
// do not (Q4_K with Q5_0; interleaved Q4_1 with plain Q4_1; interleaved Q5_0 with plain Q8_0):
// the same bits as separate matmul() calls, for ragged row counts, any token and thread count.
TEST_F(CpuMatmulTest, ManyEqualsOneMatmulEach) {
    std::mt19937 rng(33);
    MatmulScratch scratch;
    const int64_t n_in = 1536;
    struct Case {
        std::vector<GgmlType> types;
        std::vector<int64_t> rows;
        std::vector<bool> grouped;  // interleaved (where this CPU has the kernel)
    };
    using T = GgmlType;
    const Case cases[] = {
        {{T::Q4_1, T::Q4_1, T::Q5_1}, {200, 64, 37}, {true, false, false}},
        {{T::Q4_K, T::Q6_K}, {256, 17}, {false, false}},
        {{T::Q4_K, T::Q5_0, T::Q4_K}, {40, 24, 0}, {false, false, false}},
        // Gemma 3's q/k/v: Q5_0 and Q8_0 rows in groups read the same widened Q8_0 activations
        {{T::Q5_0, T::Q5_0, T::Q8_0}, {64, 40, 24}, {true, true, true}},
        {{T::Q5_0, T::Q8_0}, {24, 24}, {true, false}},  // widened and plain: one matmul each
        // Q4_K_M's q/k/v: Q4_K groups read widened Q8_K, Q6_K groups plain Q8_K: one each
        {{T::Q4_K, T::Q4_K, T::Q6_K}, {64, 24, 16}, {true, true, true}},
        {{T::Q6_K, T::Q6_K}, {24, 16}, {true, true}},
    };
    for (const Case& k : cases) {
        std::vector<Matrix> ws;
        std::list<std::vector<uint8_t>> groups;  // stable addresses
        for (size_t j = 0; j < k.types.size(); ++j) {
            ws.push_back(random_matrix(k.types[j], n_in, k.rows[j], rng));
            if (!k.grouped[j] || !row_group_dot_fn(k.types[j])) continue;
            std::vector<uint8_t>& g = groups.emplace_back(ws[j].bytes.size());
            interleave_rows(k.types[j], ws[j].bytes.data(), k.rows[j], n_in, g.data());
            ws[j].view.data = g.data();
            ws[j].view.interleaved = true;
        }
        for (int64_t n_tok : {1, 7, 19}) {
            const std::vector<float> x = test::random_floats(n_tok * n_in, rng);
            for (const auto& pool : pools_) {
                std::vector<std::vector<float>> want, got;
                std::vector<MatmulTarget> targets;
                for (const Matrix& w : ws) {
                    want.emplace_back(n_tok * w.view.n_out);
                    matmul(*pool, w.view, x.data(), n_tok, want.back().data(), scratch);
                    got.emplace_back(n_tok * w.view.n_out, -1.0f);
                }
                for (size_t j = 0; j < ws.size(); ++j)
                    targets.push_back({ws[j].view, got[j].data()});
                matmul_many(*pool, targets, x.data(), n_tok, scratch);
                for (size_t j = 0; j < ws.size(); ++j) {
                    const std::string what = name(k.types[j]) + " output " + std::to_string(j) +
                                             " n_tok=" + std::to_string(n_tok) +
                                             " threads=" + std::to_string(pool->size());
                    EXPECT_EQ(count_bit_mismatches(got[j], want[j], what), 0) << what;
                }
            }
        }
    }
}

TEST_F(CpuMatmulTest, InterleavedViewsWithoutAKernelOrWithPaddingThrow) {
    std::mt19937 rng(32);
    MatmulScratch scratch;
    const std::vector<float> x = test::random_floats(64, rng);
    std::vector<float> y(8);
    Matrix q4_0 = random_matrix(GgmlType::Q4_0, 64, 4, rng);
    q4_0.view.interleaved = true;
    EXPECT_THROW(matmul(*pools_[0], q4_0.view, x.data(), 1, y.data(), scratch), UnsupportedError);
    if (!row_group_dot_fn(GgmlType::Q4_1)) return;
    Matrix padded = random_matrix(GgmlType::Q4_1, 64, 4, rng, 8);
    padded.view.interleaved = true;
    EXPECT_THROW(matmul(*pools_[0], padded.view, x.data(), 1, y.data(), scratch), Error);
}

// Many rows: several chunks per thread, a ragged last chunk, the LM-head-like shape.
TEST_F(CpuMatmulTest, ManyOutputRows) {
    std::mt19937 rng(7);
    MatmulScratch scratch;
    for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_1, GgmlType::Q4_K, GgmlType::F16}) {
        const Matrix w = random_matrix(type, 256, 1001, rng);
        for (int64_t n_tok : {1, 9}) {
            const std::vector<float> x = test::random_floats(n_tok * 256, rng);
            const std::vector<float> want = naive_matmul(w.view, x, n_tok);
            for (const auto& pool : pools_) {
                std::vector<float> y(want.size());
                matmul(*pool, w.view, x.data(), n_tok, y.data(), scratch);
                EXPECT_EQ(count_bit_mismatches(y, want, name(type)), 0)
                    << name(type) << " n_tok=" << n_tok << " threads=" << pool->size();
            }
        }
    }
}

TEST_F(CpuMatmulTest, PaddedRowStride) {
    std::mt19937 rng(8);
    MatmulScratch scratch;
    for (GgmlType type : kDotWeightTypes) {
        const Matrix w = random_matrix(type, 512, 21, rng, /*padding=*/8);
        const std::vector<float> x = test::random_floats(5 * 512, rng);
        const std::vector<float> want = naive_matmul(w.view, x, 5);
        std::vector<float> y(want.size());
        matmul(*pools_[1], w.view, x.data(), 5, y.data(), scratch);
        EXPECT_EQ(count_bit_mismatches(y, want, name(type)), 0) << name(type);
    }
}

TEST_F(CpuMatmulTest, ReservedScratchIsNeverReallocated) {
    std::mt19937 rng(9);
    MatmulScratch scratch;
    scratch.reserve(64, 2048);
    const std::byte* data = scratch.data();
    const size_t capacity = scratch.capacity();
    ASSERT_NE(data, nullptr);
    for (GgmlType type : kDotWeightTypes) {
        for (int64_t n_in : {256, 576, 2048}) {
            if (n_in % type_traits(type).block_elems != 0) continue;
            const Matrix w = random_matrix(type, n_in, 3, rng);
            const std::vector<float> x = test::random_floats(64 * n_in, rng);
            std::vector<float> y(64 * 3);
            matmul(*pools_[1], w.view, x.data(), 64, y.data(), scratch);
            EXPECT_EQ(scratch.data(), data) << name(type) << " n_in=" << n_in;
            EXPECT_EQ(scratch.capacity(), capacity) << name(type) << " n_in=" << n_in;
        }
    }
}

TEST_F(CpuMatmulTest, UnreservedScratchGrows) {
    std::mt19937 rng(10);
    MatmulScratch scratch;
    const Matrix w = random_matrix(GgmlType::Q8_0, 64, 4, rng);
    const std::vector<float> x = test::random_floats(2 * 64, rng);
    std::vector<float> y(2 * 4);
    matmul(*pools_[0], w.view, x.data(), 2, y.data(), scratch);
    EXPECT_GE(scratch.capacity(), 2 * *row_bytes(GgmlType::Q8_0, 64));
    EXPECT_EQ(count_bit_mismatches(y, naive_matmul(w.view, x, 2), "q8_0"), 0);
}

TEST_F(CpuMatmulTest, F32WeightsAgreeWithFloat64) {
    std::mt19937 rng(11);
    MatmulScratch scratch;
    const int64_t n_in = 640, n_out = 50, n_tok = 11;
    const std::vector<float> wf = test::random_floats(n_in * n_out, rng);
    const std::vector<float> x = test::random_floats(n_in * n_tok, rng);
    const WeightView w{GgmlType::F32, n_in, n_out, wf.data(), n_in * sizeof(float)};
    std::vector<float> y(n_tok * n_out);
    matmul(*pools_[2], w, x.data(), n_tok, y.data(), scratch);
    for (int64_t t = 0; t < n_tok; ++t) {
        for (int64_t o = 0; o < n_out; ++o) {
            double sum = 0, mag = 0;
            for (int64_t i = 0; i < n_in; ++i) {
                sum += double(wf[o * n_in + i]) * x[t * n_in + i];
                mag += std::fabs(double(wf[o * n_in + i]) * x[t * n_in + i]);
            }
            EXPECT_NEAR(y[t * n_out + o], sum, 2e-7 * mag) << "t=" << t << " o=" << o;
        }
    }
}

TEST_F(CpuMatmulTest, EmptyShapesDoNothing) {
    MatmulScratch scratch;
    const WeightView w{GgmlType::Q8_0, 32, 0, nullptr, 34};
    EXPECT_NO_THROW(matmul(*pools_[1], w, nullptr, 5, nullptr, scratch));
    const WeightView w2{GgmlType::Q8_0, 32, 4, nullptr, 34};
    EXPECT_NO_THROW(matmul(*pools_[1], w2, nullptr, 0, nullptr, scratch));
    EXPECT_EQ(scratch.capacity(), 0u);
}

TEST_F(CpuMatmulTest, InvalidViewsThrow) {
    MatmulScratch scratch;
    std::vector<uint8_t> bytes(4096);
    std::vector<float> x(1024), y(1024);
    auto run = [&](WeightView w) { matmul(*pools_[0], w, x.data(), 1, y.data(), scratch); };
    EXPECT_THROW(run({GgmlType::TQ1_0, 256, 2, bytes.data(), 54}), UnsupportedError);
    EXPECT_THROW(run({GgmlType::Q8_K, 256, 2, bytes.data(), 292}), UnsupportedError);
    EXPECT_THROW(run({GgmlType::Q4_0, 48, 2, bytes.data(), 36}), Error);    // not whole blocks
    EXPECT_THROW(run({GgmlType::Q4_K, 128, 2, bytes.data(), 144}), Error);  // not whole blocks
    EXPECT_THROW(run({GgmlType::Q4_0, 64, 2, bytes.data(), 35}), Error);    // stride too short
    EXPECT_THROW(run({GgmlType::Q4_0, 64, 2, bytes.data(), 37}), Error);    // odd stride
    EXPECT_THROW(run({GgmlType::Q4_0, 0, 2, bytes.data(), 0}), Error);
    EXPECT_THROW(run({GgmlType::Q4_0, 64, 2, nullptr, 36}), Error);
    EXPECT_THROW(run({GgmlType::Q4_0, 64, 2, bytes.data() + 1, 36}), Error);  // misaligned
    EXPECT_THROW(run({GgmlType::F32, 4, 2, bytes.data(), 18}), Error);        // F32 needs 4
    EXPECT_THROW(matmul(*pools_[0], {GgmlType::F32, 4, 1, bytes.data(), 16}, x.data(), -1, y.data(),
                        scratch),
                 Error);
    try {
        run({GgmlType::Q4_0, 64, 2, bytes.data(), 35});
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("q4_0"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace fluoro::cpu
