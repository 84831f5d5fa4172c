// The float vector kernels (backend/cpu/kernels/vec_math.h) of every instruction set this CPU
// runs, against float64 references on random data: lengths that are not a multiple of any vector
// width (tails), query-head groups of 1-6 (blocks of 4 plus remainders), strided rows, both cache
// element types. The fp16 conversions must be exact; pv the bits of the running sum over the rows
// in order; the rest within a few float ulps of the reference; quantized rows give the F32
// kernels' bits over the dequantized rows.
#include "backend/cpu/kernels/vec_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/kv_rows.h"
#include "engine/backend/kernel_test_support.h"
#include "tensor/fp16.h"

namespace fluoro::cpu {
namespace {

using test::random_floats;

class VecMathTest : public ::testing::TestWithParam<CpuIsa> {
  protected:
    const VecMath& vm() const { return vec_math(GetParam()); }
    std::mt19937 rng{42};
};

constexpr int64_t kLengths[] = {1, 7, 8, 15, 16, 17, 64, 100, 256, 1000};

TEST_P(VecMathTest, Fp16ConversionsAreExact) {
    for (int64_t n : kLengths) {
        std::vector<float> x = random_floats(n, rng, 100.0f);
        if (n > 3) x[3] = 70000.0f;  // overflows fp16 -> inf
        std::vector<uint16_t> h(static_cast<size_t>(n));
        std::vector<float> r(static_cast<size_t>(n));
        vm().f32_to_f16(x.data(), h.data(), n);
        vm().round_f16(x.data(), r.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            ASSERT_EQ(h[size_t(i)], fp32_to_fp16(x[size_t(i)])) << "n " << n << " i " << i;
            ASSERT_EQ(r[size_t(i)], fp16_to_fp32(fp32_to_fp16(x[size_t(i)])));
        }
    }
}

// Rows of n elements `stride` bytes apart, as a KV cache run holds them.
struct Rows {
    std::vector<std::byte> bytes;
    size_t stride;
    std::vector<double> values;  // what the kernel should read, row-major n_rows x n
};

Rows make_rows(KvElem elem, int64_t n_rows, int64_t n, std::mt19937& rng) {
    const size_t elem_size = elem == KvElem::F16 ? 2 : 4;
    Rows r;
    r.stride = size_t(n + 3) * elem_size;  // padding between rows
    r.bytes.resize(r.stride * size_t(n_rows));
    for (int64_t j = 0; j < n_rows; ++j) {
        const std::vector<float> v = random_floats(n, rng);
        for (int64_t i = 0; i < n; ++i) {
            std::byte* at = r.bytes.data() + size_t(j) * r.stride + size_t(i) * elem_size;
            if (elem == KvElem::F16) {
                const uint16_t h = fp32_to_fp16(v[size_t(i)]);
                std::memcpy(at, &h, 2);
                r.values.push_back(fp16_to_fp32(h));
            } else {
                std::memcpy(at, &v[size_t(i)], 4);
                r.values.push_back(v[size_t(i)]);
            }
        }
    }
    return r;
}

TEST_P(VecMathTest, QkMatchesFloat64) {
    for (KvElem elem : {KvElem::F16, KvElem::F32}) {
        for (int group = 1; group <= 6; ++group) {
            for (int64_t dk : {7, 64, 80, 256}) {
                const int64_t n = 37;
                const Rows k = make_rows(elem, n, dk, rng);
                const std::vector<float> q = random_floats(group * dk, rng);
                const int64_t s_stride = n + 5;
                std::vector<float> s(size_t(group * s_stride), -1.0f);
                vm().qk(elem, q.data(), group, dk, k.bytes.data(), k.stride, n, 0.125f, s.data(),
                        s_stride);
                for (int g = 0; g < group; ++g) {
                    for (int64_t j = 0; j < n; ++j) {
                        double ref = 0, mag = 0;
                        for (int64_t i = 0; i < dk; ++i) {
                            const double prod =
                                double(q[size_t(g * dk + i)]) * k.values[size_t(j * dk + i)];
                            ref += prod;
                            mag += std::abs(prod);
                        }
                        ASSERT_NEAR(s[size_t(g * s_stride + j)], 0.125 * ref, 0.125 * mag * 1e-6)
                            << "group " << group << " dk " << dk << " g " << g << " j " << j;
                    }
                    for (int64_t j = n; j < s_stride; ++j)
                        ASSERT_EQ(s[size_t(g * s_stride + j)], -1.0f) << "wrote past the row";
                }
            }
        }
    }
}

// Against float64 within a few ulps of the sum of magnitudes, and, where the width is whole
// vectors for every ISA (a multiple of 16; the sub-vector tail is a plain loop), bit for bit:
// pv keeps as many accumulators in registers as fit (vec_math_impl.h pv_unroll: 8, 4, 2 or 1
// vectors per pass, by group size), but each output element must stay the running sum over the
// rows in order — the SIMD kernels one fused multiply-add per row, the generic one a rounded
// product then a rounded sum — whatever the unroll: the batch invariance of decode and
// verification (flash_attention.cpp) rests on an output's arithmetic not depending on how the
// work was cut. Widths include ones that need passes of several unrolls (96 = 8 + 4 vectors of
// 8 lanes, 4 + 2 of 16).
TEST_P(VecMathTest, PvAccumulatesTheRowsInOrder) {
    const bool fused = GetParam() != CpuIsa::Generic;
    for (KvElem elem : {KvElem::F16, KvElem::F32}) {
        for (int group = 1; group <= 6; ++group) {
            for (int64_t dv : {7, 16, 64, 80, 96, 128, 256}) {
                const int64_t n = 29, p_stride = n + 2, o_stride = dv + 4;
                const Rows v = make_rows(elem, n, dv, rng);
                const std::vector<float> p = random_floats(group * p_stride, rng);
                std::vector<float> o = random_floats(group * o_stride, rng);
                const std::vector<float> o0 = o;
                vm().pv(elem, p.data(), group, p_stride, n, v.bytes.data(), v.stride, dv, o.data(),
                        o_stride);
                for (int g = 0; g < group; ++g) {
                    for (int64_t d = 0; d < o_stride; ++d) {
                        const size_t at = size_t(g * o_stride + d);
                        if (d >= dv) {
                            ASSERT_EQ(o[at], o0[at]) << "wrote past the row";
                            continue;
                        }
                        double ref = o0[at], mag = std::abs(o0[at]);
                        float fold = o0[at];
                        for (int64_t j = 0; j < n; ++j) {
                            const float pj = p[size_t(g * p_stride + j)];
                            const double vj = v.values[size_t(j * dv + d)];
                            ref += double(pj) * vj;
                            mag += std::abs(double(pj) * vj);
                            if (fused) {
                                fold = std::fma(pj, float(vj), fold);
                            } else {
                                const float prod = pj * float(vj);
                                fold = fold + prod;
                            }
                        }
                        const std::string where = "group " + std::to_string(group) + " dv " +
                                                  std::to_string(dv) + " g " + std::to_string(g) +
                                                  " d " + std::to_string(d);
                        ASSERT_NEAR(o[at], ref, mag * 1e-6) << where;
                        if (dv % 16 == 0) {
                            ASSERT_EQ(o[at], fold) << "not the running sum, " << where;
                        }
                    }
                }
            }
        }
    }
}

TEST_P(VecMathTest, SoftmaxPieces) {
    for (int64_t n : kLengths) {
        std::vector<float> x = random_floats(n, rng, 10.0f);
        x[size_t(n / 2)] = 80.0f;  // 8 sigma: the maximum, somewhere in the middle
        EXPECT_EQ(vm().max(x.data(), n), 80.0f) << n;
        std::vector<float> e = x;
        const float sum = vm().exp_sub_sum(e.data(), n, 80.0f);
        double ref_sum = 0;
        for (int64_t i = 0; i < n; ++i) {
            const double ref = std::exp(double(x[size_t(i)] - 80.0f));  // the float difference
            ref_sum += ref;
            ASSERT_NEAR(e[size_t(i)], ref, ref * 3e-7 + 1e-37)
                << "n " << n << " x " << x[size_t(i)];
        }
        EXPECT_NEAR(sum, ref_sum, ref_sum * 1e-6);
        std::vector<float> scaled = e;
        vm().scale(scaled.data(), n, 0.5f, false);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(scaled[size_t(i)], e[size_t(i)] * 0.5f);
        vm().scale(e.data(), n, 0.5f, true);
        for (int64_t i = 0; i < n; ++i)
            ASSERT_EQ(e[size_t(i)], fp16_to_fp32(fp32_to_fp16(scaled[size_t(i)])));
    }
}

TEST_P(VecMathTest, SoftmaxStatsIsOnePassOfExpSumsAndBlockMaxima) {
    for (int64_t n : {int64_t{1}, int64_t{17}, int64_t{63}, int64_t{64}, int64_t{65}, int64_t{1000},
                      int64_t{4100}}) {
        std::vector<float> s = random_floats(n, rng, 5.0f);
        s[size_t(n / 3)] = 20.0f;
        double ref_sum = 0, ref_ps = 0;
        for (float x : s) ref_sum += std::exp(double(x) - 20.0);
        const float lse = float(20.0 + std::log(ref_sum));
        ref_sum = 0;
        std::vector<float> p(static_cast<size_t>(n), -1.0f);
        std::vector<float> bm(size_t((n + kSoftmaxStatsBlock - 1) / kSoftmaxStatsBlock), 0.0f);
        const float cut = lse + std::log(2e-3f);
        const SoftmaxStats st = vm().softmax_stats(s.data(), n, lse, cut, p.data(), bm.data());
        int64_t below = 0;
        for (float x : s) below += x < cut ? 1 : 0;
        EXPECT_EQ(st.below, below) << n;
        for (int64_t i = 0; i < n; ++i) {
            const double ref = std::exp(double(s[size_t(i)] - lse));
            ref_sum += ref;
            ref_ps += ref * double(s[size_t(i)]);
            ASSERT_NEAR(p[size_t(i)], ref, ref * 3e-7 + 1e-37) << "n " << n << " i " << i;
        }
        EXPECT_NEAR(st.sum_p, 1.0, 1e-5) << n;
        EXPECT_NEAR(st.sum_p, ref_sum, ref_sum * 1e-5) << n;  // float sums of 4k terms
        EXPECT_NEAR(st.sum_ps, ref_ps, std::fabs(ref_ps) * 1e-5 + 1e-6) << n;
        for (size_t b = 0; b < bm.size(); ++b) {
            const size_t lo = b * size_t(kSoftmaxStatsBlock),
                         hi = std::min(size_t(n), lo + size_t(kSoftmaxStatsBlock));
            EXPECT_EQ(bm[b], *std::max_element(s.begin() + std::ptrdiff_t(lo),
                                               s.begin() + std::ptrdiff_t(hi)))
                << "n " << n << " block " << b;
        }
    }
}

TEST_P(VecMathTest, ExpOverItsWholeRange) {
    // -87.3 .. 88 in 4000 steps, plus values that must underflow to zero.
    std::vector<float> x;
    for (int i = 0; i <= 4000; ++i) x.push_back(-87.3f + float(i) * (88.0f + 87.3f) / 4000.0f);
    for (float tiny : {-88.0f, -100.0f, -1000.0f}) x.push_back(tiny);
    std::vector<float> e = x;
    vm().exp_sub_sum(e.data(), int64_t(e.size()), 0.0f);
    for (size_t i = 0; i < x.size(); ++i) {
        const double ref = std::exp(double(x[i]));
        if (x[i] < -87.3f)
            ASSERT_LE(e[i], 1e-37f) << x[i];
        else
            ASSERT_NEAR(e[i], ref, ref * 3e-7) << x[i];
    }
}

TEST_P(VecMathTest, ElementwiseOps) {
    for (int64_t n : kLengths) {
        const std::vector<float> x = random_floats(n, rng, 3.0f);
        const std::vector<float> w = random_floats(n, rng);
        std::vector<float> y(static_cast<size_t>(n));
        vm().rms_norm(x.data(), w.data(), y.data(), n, 1e-6f);
        double ss = 0;
        for (float v : x) ss += double(v) * v;
        const double inv = 1.0 / std::sqrt(ss / double(n) + 1e-6);
        for (int64_t i = 0; i < n; ++i)
            ASSERT_NEAR(y[size_t(i)], x[size_t(i)] * inv * w[size_t(i)],
                        std::abs(x[size_t(i)] * inv * w[size_t(i)]) * 1e-6);

        std::vector<float> g = x;
        vm().swiglu(g.data(), w.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            const double xi = x[size_t(i)];
            const double ref = xi / (1 + std::exp(-xi)) * w[size_t(i)];
            ASSERT_NEAR(g[size_t(i)], ref, std::abs(ref) * 1e-6 + 1e-7) << xi;
        }
        g = x;
        vm().geglu_tanh(g.data(), w.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            const double xi = x[size_t(i)];
            const double ref = 0.5 * xi *
                               (1 + std::tanh(0.7978845608028654 * xi * (1 + 0.044715 * xi * xi))) *
                               w[size_t(i)];
            ASSERT_NEAR(g[size_t(i)], ref, std::abs(ref) * 1e-6 + 1e-6) << xi;
        }
        g = x;
        vm().softcap(g.data(), n, 30.0f);
        for (int64_t i = 0; i < n; ++i)
            // tanh from exp (1 - 2 / (e^2y + 1)): absolute error ~2e-7, times the cap
            ASSERT_NEAR(g[size_t(i)], 30.0 * std::tanh(x[size_t(i)] / 30.0), 30 * 3e-7)
                << x[size_t(i)];
        g = x;
        vm().add(g.data(), w.data(), n);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(g[size_t(i)], x[size_t(i)] + w[size_t(i)]);
    }
}

TEST_P(VecMathTest, SaturatingActivationsStayFinite) {
    std::vector<float> x = {-1000.0f, -90.0f, -20.0f, 0.0f, 20.0f, 90.0f, 1000.0f, -0.0f};
    const std::vector<float> one(x.size(), 1.0f);
    std::vector<float> g = x;
    vm().swiglu(g.data(), one.data(), int64_t(g.size()));
    for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_TRUE(std::isfinite(g[i])) << x[i];
        EXPECT_NEAR(g[i], x[i] > 0 ? x[i] : 0.0f, 1e-6f * std::abs(x[i]) + 3e-8f) << x[i];
    }
    g = x;
    vm().geglu_tanh(g.data(), one.data(), int64_t(g.size()));
    for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_TRUE(std::isfinite(g[i])) << x[i];
        EXPECT_NEAR(g[i], x[i] > 0 ? x[i] : 0.0f, 1e-6f * std::abs(x[i])) << x[i];
    }
}

// Quantized rows (Q8_0, Q4_0 blocks, as kv_store writes them) are dequantized in registers with
// kv_load_rows' arithmetic (d·q is exact in float), and the kernels then run the F32 kernels'
// float operations in the same order: the scores and outputs must equal, bit for bit, the F32
// kernels' over the same rows dequantized to memory. Strided rows (padding between them), every
// group size, head dimensions of 1, 2, 3 and 8 blocks.
TEST_P(VecMathTest, QuantizedRowsGiveTheDequantizedRowsBits) {
    for (KvType type : {KvType::Q8_0, KvType::Q4_0}) {
        const KvElem elem = type == KvType::Q8_0 ? KvElem::Q8_0 : KvElem::Q4_0;
        for (int group = 1; group <= 6; ++group) {
            for (int64_t d : {32, 64, 96, 256}) {
                const int64_t n = 37;
                const size_t stride = kv_row_bytes(type, d) + 6;
                std::vector<std::byte> rows(stride * size_t(n));
                std::vector<float> deq(size_t(n * d));
                for (int64_t j = 0; j < n; ++j) {
                    const std::vector<float> x = random_floats(d, rng, 3.0f);
                    kv_store(type, x.data(), rows.data() + size_t(j) * stride, d);
                }
                kv_load_rows(type, rows.data(), stride, n, d, deq.data());
                const auto* deq_bytes = reinterpret_cast<const std::byte*>(deq.data());
                const size_t deq_stride = size_t(d) * sizeof(float);
                const std::string what = std::string(kv_type_name(type)) + " group " +
                                         std::to_string(group) + " d " + std::to_string(d);

                const std::vector<float> q = random_floats(group * d, rng);
                const int64_t s_stride = n + 5;
                std::vector<float> s(size_t(group * s_stride), -1.0f), s_ref = s;
                vm().qk(elem, q.data(), group, d, rows.data(), stride, n, 0.125f, s.data(),
                        s_stride);
                vm().qk(KvElem::F32, q.data(), group, d, deq_bytes, deq_stride, n, 0.125f,
                        s_ref.data(), s_stride);
                ASSERT_EQ(0, std::memcmp(s.data(), s_ref.data(), s.size() * sizeof(float)))
                    << "qk " << what;

                const int64_t p_stride = n + 2, o_stride = d + 4;
                const std::vector<float> p = random_floats(group * p_stride, rng);
                std::vector<float> o = random_floats(group * o_stride, rng), o_ref = o;
                vm().pv(elem, p.data(), group, p_stride, n, rows.data(), stride, d, o.data(),
                        o_stride);
                vm().pv(KvElem::F32, p.data(), group, p_stride, n, deq_bytes, deq_stride, d,
                        o_ref.data(), o_stride);
                ASSERT_EQ(0, std::memcmp(o.data(), o_ref.data(), o.size() * sizeof(float)))
                    << "pv " << what;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Isa, VecMathTest, ::testing::ValuesIn(test::supported_isas()),
                         [](const auto& param_info) {
                             return std::string(cpu_isa_name(param_info.param));
                         });

}  // namespace
}  // namespace fluoro::cpu
