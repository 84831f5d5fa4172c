// The CPU dot kernels (backend/cpu/kernels/vec_dot.h), for every supported weight type:
//  (a) against float64 Σ dequantize(w)·x: the error must stay within what quantizing the
//      activations to the partner format can cost (a bound computed per block, see
//      activation_error_bound) plus float rounding;
//  (b) against float64 Σ dequantize(w)·dequantize(partner(x)): equal up to float32 rounding of
//      the per-block scale products and of the running sum, which proves the integer kernel
//      computes exactly the quantized product;
// each on every instruction set this CPU runs (CpuIsa: generic, AVX2, AVX-512); plus: the
// token-tile path equals single-row calls bit for bit, the SIMD kernels agree with the generic ones
// within 1e-6 of Σ|ŵ·x̂| (bit for bit for the types without hand-written kernels), exhaustive
// fp16/bf16 conversion, the partner table and error handling.
// Set FLUORO_KERNEL_STATS=1 to print the observed errors per type.
#include "backend/cpu/kernels/vec_dot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/backend/kernel_test_support.h"
#include "tensor/dequantize.h"

namespace fluoro::cpu {
namespace {

using test::kDotWeightTypes;

constexpr double kUlp = 0x1.0p-24;  // float32 unit roundoff

std::string name(GgmlType t) {
    return std::string(type_name(t));
}

std::vector<float> dequantized(GgmlType type, const std::vector<uint8_t>& bytes, int64_t n) {
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(type, bytes.data(), out.data(), n);
    return out;
}

std::vector<uint8_t> to_partner(GgmlType weight, const std::vector<float>& x) {
    return test::quantized(vec_dot_partner(weight), x);
}

float half_field(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, sizeof(h));
    return fp16_to_fp32(h);
}

// Q4_1/Q5_1 blocks and Q8_1 blocks both keep their second half (m, s) at byte 2.
float legacy_m(GgmlType weight, const std::vector<uint8_t>& w, int64_t block) {
    return half_field(w.data() + block * type_traits(weight).block_bytes + 2);
}
float q8_1_s(const std::vector<uint8_t>& xq, int64_t block) {
    return half_field(xq.data() + block * sizeof(BlockQ8_1) + 2);
}

float absmax(const float* x, int n) {
    float m = 0;
    for (int i = 0; i < n; ++i) m = std::max(m, std::fabs(x[i]));
    return m;
}

// A priori bound on |Σ ŵ·x̂ − Σ ŵ·x| from converting x to the partner format (ŵ = dequantized
// weights), using only x and the weights:
//   F16 / BF16: |x − x̂| <= 2^-11 |x| / 2^-8 |x| (round to nearest, normal range);
//   Q8_0 / Q8_1: per block of 32, d = amax/127, x̂ = q·fp16(d), |x − x̂| <= d/2 + 127|d − fp16(d)|;
//     Q8_1 also replaces Σx of the block by s = fp16(d·Σq) in the m term:
//     |s − Σx| <= 16d + 2^-11|s|, weighted by |m|;
//   Q8_K: per block of 256, d = amax/127 kept in float32, |x − x̂| <= d/2.
double activation_error_bound(GgmlType weight, const std::vector<uint8_t>& w,
                              const std::vector<float>& w_hat, const std::vector<float>& x,
                              const std::vector<uint8_t>& xq) {
    const auto n = static_cast<int64_t>(x.size());
    const GgmlType partner = vec_dot_partner(weight);
    double bound = 0;
    switch (partner) {
        case GgmlType::F32:
            return 0;
        case GgmlType::F16:
        case GgmlType::BF16: {
            const double rel = partner == GgmlType::F16 ? 0x1.0p-11 : 0x1.0p-8;
            for (int64_t i = 0; i < n; ++i) bound += std::fabs(double(w_hat[i]) * x[i]) * rel;
            return bound;
        }
        case GgmlType::Q8_0:
        case GgmlType::Q8_1:
        case GgmlType::Q8_K: {
            const int block = static_cast<int>(type_traits(partner).block_elems);
            for (int64_t b = 0; b < n / block; ++b) {
                const float d = absmax(&x[b * block], block) / 127;
                const double d_stored =
                    partner == GgmlType::Q8_K ? d : fp16_to_fp32(fp32_to_fp16(d));
                const double e = d * 0.5001 + 127 * std::fabs(d - d_stored);
                const double m = partner == GgmlType::Q8_1 ? legacy_m(weight, w, b) : 0.0;
                for (int j = 0; j < block; ++j) bound += std::fabs(w_hat[b * block + j] - m) * e;
                if (partner == GgmlType::Q8_1)
                    bound += std::fabs(m) * (16.001 * d + 0x1.01p-11 * std::fabs(q8_1_s(xq, b)));
            }
            return bound;
        }
        default:
            ADD_FAILURE() << "no bound for partner " << name(partner);
            return 0;
    }
}

struct DotCheck {
    double got = 0;
    double exact = 0;    // Σ ŵ·x
    double bound_a = 0;  // activation-quantization bound on |got − exact|, plus rounding
    double quant = 0;    // Σ ŵ·x̂ (with Q8_1's s term): what the kernel computes in exact math
    double tol_b = 0;    // float32 rounding allowance on |got − quant|
    double scale = 0;    // Σ|ŵ·x|, for relative errors
};

DotCheck check_dot(GgmlType weight, const std::vector<uint8_t>& w, const std::vector<float>& x,
                   CpuIsa isa = best_cpu_isa()) {
    const auto n = static_cast<int64_t>(x.size());
    const GgmlType partner = vec_dot_partner(weight);
    const std::vector<float> w_hat = dequantized(weight, w, n);
    const std::vector<uint8_t> xq = to_partner(weight, x);
    const std::vector<float> x_hat = dequantized(partner, xq, n);

    DotCheck c;
    float got = 0;
    row_dot_fn(weight, isa)(w.data(), xq.data(), 0, 1, n, &got);
    c.got = got;
    double scale_q = 0;
    for (int64_t i = 0; i < n; ++i) {
        c.exact += double(w_hat[i]) * x[i];
        c.scale += std::fabs(double(w_hat[i]) * x[i]);
        c.quant += double(w_hat[i]) * x_hat[i];
        scale_q += std::fabs(double(w_hat[i]) * x_hat[i]);
    }
    if (partner == GgmlType::Q8_1) {
        // The kernel's m·s uses the block's stored s = fp16(d·Σq) where ŵ·x̂ has m·Σx̂.
        for (int64_t b = 0; b < n / kQK; ++b) {
            double sum_x_hat = 0;
            for (int j = 0; j < kQK; ++j) sum_x_hat += x_hat[b * kQK + j];
            const double m = legacy_m(weight, w, b);
            c.quant += m * (q8_1_s(xq, b) - sum_x_hat);
            scale_q += std::fabs(m * q8_1_s(xq, b));
        }
    }
    // Recursive-summation bound: one rounding per block term plus a few per block for the
    // scale products (float types: one per product, then double accumulation).
    const int64_t block = type_traits(weight).block_elems;
    const double roundings = block == 1 ? 2.0 : double(n / block + 16);
    c.tol_b = roundings * kUlp * scale_q;
    c.bound_a = activation_error_bound(weight, w, w_hat, x, xq) + c.tol_b;
    return c;
}

bool print_stats() {
    return std::getenv("FLUORO_KERNEL_STATS") != nullptr;
}

// n values to test per type: the model widths that fit the block size.
std::vector<int64_t> widths_for(GgmlType t) {
    if (test::is_k_quant(t)) return {256, 1536, 2048};
    return {32, 576, 640, 1536, 2048};
}

TEST(CpuKernelVecDot, WithinActivationQuantizationBoundAndExactOnQuantizedInputs) {
    for (CpuIsa isa : test::supported_isas()) {
        std::mt19937 rng(1234);
        for (GgmlType type : kDotWeightTypes) {
            double worst_a = 0, worst_b = 0, worst_a_ratio = 0;  // relative to Σ|ŵx|, and vs bound
            for (int64_t n : widths_for(type)) {
                for (int trial = 0; trial < 20; ++trial) {
                    const std::vector<uint8_t> w = test::random_weight_row(type, n, rng);
                    const std::vector<float> x =
                        test::random_floats(n, rng, trial % 2 ? 3.0f : 0.5f);
                    const DotCheck c = check_dot(type, w, x, isa);
                    const std::string what = name(type) + " " + std::string(cpu_isa_name(isa)) +
                                             " n=" + std::to_string(n) + " trial " +
                                             std::to_string(trial);
                    ASSERT_TRUE(std::isfinite(c.got)) << what;
                    EXPECT_LE(std::fabs(c.got - c.exact), c.bound_a)
                        << what << ": got " << c.got << ", exact " << c.exact;
                    EXPECT_LE(std::fabs(c.got - c.quant), c.tol_b)
                        << what << ": got " << c.got << ", quantized product " << c.quant;
                    worst_a = std::max(worst_a, std::fabs(c.got - c.exact) / c.scale);
                    worst_b = std::max(worst_b, std::fabs(c.got - c.quant) / c.scale);
                    worst_a_ratio = std::max(worst_a_ratio, std::fabs(c.got - c.exact) / c.bound_a);
                }
            }
            if (print_stats()) {
                std::printf(
                    "%-7s %-7s vs exact: max err/Σ|wx| %.2e (%.0f%% of bound)   vs quantized: "
                    "max err/Σ|wx| %.2e\n",
                    name(type).c_str(), std::string(cpu_isa_name(isa)).c_str(), worst_a,
                    100 * worst_a_ratio, worst_b);
            }
        }
    }
}

// Outliers: one large activation per block (the case that makes Q8 scales coarse).
TEST(CpuKernelVecDot, OutlierActivationsStayWithinBound) {
    for (CpuIsa isa : test::supported_isas()) {
        std::mt19937 rng(99);
        for (GgmlType type : kDotWeightTypes) {
            const int64_t n = 2048;
            const std::vector<uint8_t> w = test::random_weight_row(type, n, rng);
            std::vector<float> x = test::random_floats(n, rng);
            for (int64_t i = 0; i < n; i += 32) x[i + (i / 32) % 32] *= 50.0f;
            const DotCheck c = check_dot(type, w, x, isa);
            const std::string what = name(type) + " " + std::string(cpu_isa_name(isa));
            EXPECT_LE(std::fabs(c.got - c.exact), c.bound_a) << what;
            EXPECT_LE(std::fabs(c.got - c.quant), c.tol_b) << what;
        }
    }
}

TEST(CpuKernelVecDot, ZeroActivationsGiveZero) {
    std::mt19937 rng(5);
    for (GgmlType type : kDotWeightTypes) {
        const int64_t n = 512;
        const std::vector<uint8_t> w = test::random_weight_row(type, n, rng);
        const std::vector<uint8_t> xq = to_partner(type, std::vector<float>(n, 0.0f));
        EXPECT_EQ(vec_dot(type, w.data(), xq.data(), n), 0.0f) << name(type);
        EXPECT_EQ(vec_dot(type, w.data(), xq.data(), 0), 0.0f) << name(type);
    }
}

// One call with a tile of n_x rows must equal n_x single-row calls bit for bit (the matmul relies
// on it: prefill and decode give the same logits).
TEST(CpuKernelRowDot, TileEqualsSingleRows) {
    for (CpuIsa isa : test::supported_isas()) {
        std::mt19937 rng(77);
        for (GgmlType type : kDotWeightTypes) {
            const int64_t n = 1536;
            const std::vector<uint8_t> w = test::random_weight_row(type, n, rng);
            const size_t stride = *row_bytes(vec_dot_partner(type), n) + 64;  // padded rows
            std::vector<uint8_t> xs(stride * kMaxDotRows);
            for (int t = 0; t < kMaxDotRows; ++t) {
                const std::vector<uint8_t> xq = to_partner(type, test::random_floats(n, rng));
                std::memcpy(xs.data() + t * stride, xq.data(), xq.size());
            }
            const RowDotFn fn = row_dot_fn(type, isa);
            for (int n_x = 1; n_x <= kMaxDotRows; ++n_x) {
                float out[kMaxDotRows];
                fn(w.data(), xs.data(), stride, n_x, n, out);
                for (int t = 0; t < n_x; ++t) {
                    float single = 0;
                    fn(w.data(), xs.data() + t * stride, 0, 1, n, &single);
                    EXPECT_EQ(std::bit_cast<uint32_t>(out[t]), std::bit_cast<uint32_t>(single))
                        << name(type) << " " << cpu_isa_name(isa) << " n_x=" << n_x << " row " << t;
                }
            }
        }
    }
}

// The row-pair (prefill) kernel must equal two single-row calls bit for bit for every tile size.
TEST(CpuKernelRowPairDot, EqualsTwoSingleRows) {
    int checked = 0;
    for (CpuIsa isa : test::supported_isas()) {
        std::mt19937 rng(79);
        for (GgmlType type : kDotWeightTypes) {
            const RowPairDotFn pair = row_pair_dot_fn(type, isa);
            if (!pair) continue;
            const int64_t n = 1536;
            const size_t w_stride = *row_bytes(type, n) + 16;  // padded weight rows
            std::vector<uint8_t> ws(2 * w_stride);
            for (int r = 0; r < 2; ++r) {
                const std::vector<uint8_t> w = test::random_weight_row(type, n, rng);
                std::memcpy(ws.data() + r * w_stride, w.data(), w.size());
            }
            const size_t stride = *row_bytes(vec_dot_partner(type), n) + 64;
            std::vector<uint8_t> xs(stride * kMaxDotRows);
            for (int t = 0; t < kMaxDotRows; ++t) {
                const std::vector<uint8_t> xq = to_partner(type, test::random_floats(n, rng));
                std::memcpy(xs.data() + t * stride, xq.data(), xq.size());
            }
            const RowDotFn single = row_dot_fn(type, isa);
            for (int n_x = 1; n_x <= kMaxDotRows; ++n_x) {
                float out0[kMaxDotRows], out1[kMaxDotRows], ref[kMaxDotRows];
                pair(ws.data(), w_stride, xs.data(), stride, n_x, n, out0, out1);
                for (int r = 0; r < 2; ++r) {
                    single(ws.data() + r * w_stride, xs.data(), stride, n_x, n, ref);
                    const float* got = r == 0 ? out0 : out1;
                    for (int t = 0; t < n_x; ++t)
                        EXPECT_EQ(std::bit_cast<uint32_t>(got[t]), std::bit_cast<uint32_t>(ref[t]))
                            << name(type) << " " << cpu_isa_name(isa) << " n_x=" << n_x << " row "
                            << r << " token " << t;
                }
            }
            ++checked;
        }
    }
    if (cpu_isa_supported(CpuIsa::Avx512)) {
        EXPECT_EQ(checked, 7);  // the legacy types and MXFP4 on AVX-512
    } else {
        EXPECT_EQ(checked, 0);
    }
}

// Types whose SIMD kernels are the generic source compiled for the ISA (no FMA contraction): the
// same bits. The hand-written ones (dot_x86_kernels.h) sum the same integers per block and differ
// only in float order: within 1e-6 of Σ|ŵ·x̂|; for F32/F16/BF16 the SIMD sums are fp32 (the
// generic ones double): within 1e-5.
bool has_hand_written_kernel(GgmlType t) {
    switch (t) {
        case GgmlType::Q4_0:
        case GgmlType::Q4_1:
        case GgmlType::Q5_0:
        case GgmlType::Q5_1:
        case GgmlType::Q8_0:
        case GgmlType::IQ4_NL:
        case GgmlType::MXFP4:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K:
        case GgmlType::IQ4_XS:
        case GgmlType::IQ2_XXS:
        case GgmlType::IQ2_XS:
        case GgmlType::IQ2_S:
        case GgmlType::IQ3_XXS:
        case GgmlType::IQ3_S:
        case GgmlType::IQ1_S:
        case GgmlType::IQ1_M:
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16:
            return true;
        default:
            return false;
    }
}

TEST(CpuKernelRowDot, SimdMatchesGenericWithinRounding) {
    const std::vector<CpuIsa> isas = test::supported_isas();
    if (isas.size() < 2) GTEST_SKIP() << "no SIMD kernels on this CPU or build";
    for (CpuIsa isa : isas) {
        if (isa == CpuIsa::Generic) continue;
        std::mt19937 rng(4242);
        double worst = 0;
        for (GgmlType type : kDotWeightTypes) {
            for (int64_t n : widths_for(type)) {
                const std::vector<uint8_t> w = test::random_weight_row(type, n, rng);
                const GgmlType partner = vec_dot_partner(type);
                const size_t stride = *row_bytes(partner, n);
                const std::vector<float> w_hat = dequantized(type, w, n);
                std::vector<uint8_t> xs;
                std::vector<double> scale(kMaxDotRows);  // Σ|ŵ·x̂| per row
                for (int t = 0; t < kMaxDotRows; ++t) {
                    const std::vector<uint8_t> xq = to_partner(type, test::random_floats(n, rng));
                    const std::vector<float> x_hat = dequantized(partner, xq, n);
                    for (int64_t i = 0; i < n; ++i)
                        scale[t] += std::fabs(double(w_hat[i]) * x_hat[i]);
                    xs.insert(xs.end(), xq.begin(), xq.end());
                }
                float generic[kMaxDotRows], simd[kMaxDotRows];
                row_dot_fn(type, CpuIsa::Generic)(w.data(), xs.data(), stride, kMaxDotRows, n,
                                                  generic);
                row_dot_fn(type, isa)(w.data(), xs.data(), stride, kMaxDotRows, n, simd);
                for (int t = 0; t < kMaxDotRows; ++t) {
                    const std::string what = name(type) + " " + std::string(cpu_isa_name(isa)) +
                                             " n=" + std::to_string(n) + " row " +
                                             std::to_string(t);
                    if (!has_hand_written_kernel(type)) {
                        EXPECT_EQ(std::bit_cast<uint32_t>(generic[t]),
                                  std::bit_cast<uint32_t>(simd[t]))
                            << what;
                        continue;
                    }
                    // Float types: fp32 accumulators (ggml's SIMD order) against the generic
                    // kernel's double ones; quantized types: exact integer block sums.
                    const double diff = std::fabs(double(simd[t]) - generic[t]);
                    const bool fp32_sum =
                        type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16;
                    EXPECT_LE(diff, (fp32_sum ? 1e-5 : 1e-6) * scale[t])
                        << what << ": " << simd[t] << " vs " << generic[t];
                    worst = std::max(worst, diff / scale[t]);
                }
            }
        }
        if (print_stats())
            std::printf("%s vs generic: max diff %.2e of Σ|wx|\n",
                        std::string(cpu_isa_name(isa)).c_str(), worst);
    }
}

// A one-element F16/BF16 dot with 1.0 returns the weight itself (for every finite value, -0 as
// +0, inf as inf): checks the kernels' inline conversions against tensor/fp16.h for every 16-bit
// pattern, on every compiled ISA.
TEST(CpuKernelRowDot, SixteenBitConversionsAreExactForAllPatterns) {
    for (CpuIsa isa : test::supported_isas()) {
        for (GgmlType type : {GgmlType::F16, GgmlType::BF16}) {
            const uint16_t one = type == GgmlType::F16 ? uint16_t{0x3C00} : uint16_t{0x3F80};
            const auto to_float = type == GgmlType::F16 ? fp16_to_fp32 : bf16_to_fp32;
            const RowDotFn fn = row_dot_fn(type, isa);
            int mismatches = 0;
            for (uint32_t h = 0; h <= 0xFFFF; ++h) {
                const auto w = static_cast<uint16_t>(h);
                float got;
                fn(&w, &one, 0, 1, 1, &got);
                const float want = to_float(w);
                // == rather than bits: the sum starts at +0, so -0 comes back as +0.
                const bool same = got == want || (std::isnan(got) && std::isnan(want));
                if (!same && ++mismatches <= 3)
                    ADD_FAILURE() << name(type) << " bits 0x" << std::hex << h << ": got " << got
                                  << ", want " << want;
            }
            EXPECT_EQ(mismatches, 0) << name(type);
        }
    }
}

// A hand-checked Q4_0 block: nibble 9 (weight 1·d) everywhere, d = 0.5; x = 1 everywhere gives
// Q8_0 q = 127 with d_x = fp16(1/127): 32·127 · 0.5 · d_x.
TEST(CpuKernelVecDot, HandComputedQ4_0Block) {
    BlockQ4_0 w{};
    w.d = fp32_to_fp16(0.5f);
    std::memset(w.qs, 0x99, sizeof(w.qs));
    const std::vector<uint8_t> xq = to_partner(GgmlType::Q4_0, std::vector<float>(32, 1.0f));
    const float d_x = fp16_to_fp32(fp32_to_fp16(1.0f / 127));
    EXPECT_EQ(vec_dot(GgmlType::Q4_0, &w, xq.data(), 32), float(32 * 127) * 0.5f * d_x);
}

// A hand-checked MXFP4 block: nibble 7 (E2M1 6.0, stored doubled as 12) in the low half and 0xF
// (-6.0) in the high half, e = 126 (scale 2^-1, halved in the kernel to 2^-2 against the doubled
// values); x = 1 everywhere gives Q8_0 q = 127, d_x = fp16(1/127). Low half 16 · 127 · 12,
// high half −16 · 127 · 12 plus one element flipped: the block sums to 2 · 127 · 12 · 2^-2 · d_x.
TEST(CpuKernelVecDot, HandComputedMXFP4Block) {
    BlockMXFP4 w{};
    w.e = 126;
    std::memset(w.qs, 0xF7, sizeof(w.qs));  // low nibble 7, high nibble 0xF
    w.qs[0] = 0x77;                         // element 16 becomes +6.0 too
    const std::vector<uint8_t> xq = to_partner(GgmlType::MXFP4, std::vector<float>(32, 1.0f));
    const float d_x = fp16_to_fp32(fp32_to_fp16(1.0f / 127));
    for (CpuIsa isa : test::supported_isas()) {
        float got = 0;
        row_dot_fn(GgmlType::MXFP4, isa)(&w, xq.data(), 0, 1, 32, &got);
        EXPECT_EQ(got, (d_x * 0.25f) * float(2 * 127 * 12)) << cpu_isa_name(isa);
    }
}

TEST(CpuKernelPartner, MatchesGgmlCpuVecDotTypes) {
    EXPECT_EQ(vec_dot_partner(GgmlType::F32), GgmlType::F32);
    EXPECT_EQ(vec_dot_partner(GgmlType::F16), GgmlType::F16);
    EXPECT_EQ(vec_dot_partner(GgmlType::BF16), GgmlType::BF16);
    for (GgmlType t :
         {GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q8_0, GgmlType::IQ4_NL, GgmlType::MXFP4})
        EXPECT_EQ(vec_dot_partner(t), GgmlType::Q8_0) << name(t);
    for (GgmlType t : {GgmlType::Q4_1, GgmlType::Q5_1})
        EXPECT_EQ(vec_dot_partner(t), GgmlType::Q8_1) << name(t);
    for (GgmlType t : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                       GgmlType::Q6_K, GgmlType::IQ4_XS, GgmlType::IQ2_XXS, GgmlType::IQ2_XS,
                       GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S})
        EXPECT_EQ(vec_dot_partner(t), GgmlType::Q8_K) << name(t);
    for (GgmlType t : kDotWeightTypes) EXPECT_TRUE(vec_dot_supported(t)) << name(t);
}

TEST(CpuKernelPartner, UnsupportedTypesThrowNamingTheType) {
    for (GgmlType t : {GgmlType::Q8_1, GgmlType::Q8_K, GgmlType::TQ2_0, GgmlType::I32, GgmlType::I8,
                       GgmlType::F64, GgmlType::TQ1_0}) {
        EXPECT_FALSE(vec_dot_supported(t)) << name(t);
        EXPECT_THROW(vec_dot_partner(t), UnsupportedError) << name(t);
        EXPECT_THROW(row_dot_fn(t), UnsupportedError) << name(t);
        try {
            (void)vec_dot(t, nullptr, nullptr, 256);
            ADD_FAILURE() << name(t) << " did not throw";
        } catch (const UnsupportedError& e) {
            EXPECT_NE(std::string(e.what()).find(name(t)), std::string::npos) << e.what();
        }
    }
}

TEST(CpuKernelIsa, NamesAndBestIsSupported) {
    EXPECT_EQ(cpu_isa_name(CpuIsa::Generic), "generic");
    EXPECT_EQ(cpu_isa_name(CpuIsa::Avx2), "avx2");
    EXPECT_EQ(cpu_isa_name(CpuIsa::Avx512), "avx512");
    EXPECT_TRUE(cpu_isa_supported(CpuIsa::Generic));
    EXPECT_TRUE(cpu_isa_supported(best_cpu_isa()));
    EXPECT_EQ(cpu_isa_name(), cpu_isa_name(best_cpu_isa()));
    if (cpu_isa_supported(CpuIsa::Avx512)) {
        EXPECT_TRUE(cpu_isa_supported(CpuIsa::Avx2));
    }
    for (CpuIsa isa : {CpuIsa::Avx2, CpuIsa::Avx512}) {
        if (!cpu_isa_supported(isa)) {
            EXPECT_THROW(row_dot_fn(GgmlType::Q8_0, isa), UnsupportedError);
        }
    }
}

TEST(CpuKernelVecDot, BadLengthsThrow) {
    std::vector<uint8_t> buf(4096);
    EXPECT_THROW(vec_dot(GgmlType::Q4_0, buf.data(), buf.data(), 48), Error);
    EXPECT_THROW(vec_dot(GgmlType::Q4_K, buf.data(), buf.data(), 128), Error);
    EXPECT_THROW(vec_dot(GgmlType::F32, buf.data(), buf.data(), -1), Error);
}

}  // namespace
}  // namespace fluoro::cpu
