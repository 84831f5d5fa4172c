// Interleaved weight rows (backend/cpu/kernels/interleave.h: Q4_1, Q5_0, Q8_0, Q4_K, Q6_K) and
// their row-group kernels:
//  - interleave_rows / deinterleave_row give back every row's bytes, and refuse what has no layout;
//  - a group kernel agrees with the generic row kernel on the same rows within 1e-6 of Σ|ŵ·x̂|
//    (same integer block sums, a different float order), on random and on extreme blocks;
//  - a token's result is the same bits whatever the tile it is in (batch invariance: prefill,
//    decode and speculative verification agree), and the same on every SIMD instruction set.
#include "backend/cpu/kernels/interleave.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/kernels/vec_dot.h"
#include "core/error.h"
#include "engine/backend/kernel_test_support.h"
#include "tensor/dequantize.h"
#include "tensor/fp16.h"

namespace fluoro::cpu {
namespace {

// n_out random GGUF rows of `type`, contiguous.
std::vector<uint8_t> random_rows(GgmlType type, int64_t n_in, int64_t n_out, std::mt19937& rng) {
    std::vector<uint8_t> rows;
    for (int64_t o = 0; o < n_out; ++o) {
        const std::vector<uint8_t> r = test::random_weight_row(type, n_in, rng);
        rows.insert(rows.end(), r.begin(), r.end());
    }
    return rows;
}

std::vector<uint8_t> interleaved(GgmlType type, const std::vector<uint8_t>& rows, int64_t n_in,
                                 int64_t n_out) {
    std::vector<uint8_t> out(rows.size());
    interleave_rows(type, rows.data(), n_out, n_in, out.data());
    return out;
}

// kMaxDotRows activation rows in the partner format, `stride` bytes apart.
std::vector<uint8_t> partner_rows(GgmlType type, int64_t n, size_t stride, std::mt19937& rng) {
    std::vector<uint8_t> xs(stride * kMaxDotRows);
    for (int t = 0; t < kMaxDotRows; ++t) {
        const std::vector<uint8_t> xq =
            test::quantized(vec_dot_partner(type), test::random_floats(n, rng));
        std::memcpy(xs.data() + t * stride, xq.data(), xq.size());
    }
    return xs;
}

// The same rows widened for the group kernels (interleave.h: quantize_group_x_row), `stride`
// bytes apart.
std::vector<uint8_t> widened(GgmlType type, const std::vector<uint8_t>& xs, size_t xs_stride,
                             int64_t n, size_t stride) {
    std::vector<uint8_t> out(stride * kMaxDotRows);
    for (int t = 0; t < kMaxDotRows; ++t)
        widen_partner_row(type, xs.data() + t * xs_stride, out.data() + t * stride, n);
    return out;
}

std::vector<CpuIsa> isas_with_group_kernel(GgmlType type) {
    std::vector<CpuIsa> out;
    for (CpuIsa isa : test::supported_isas())
        if (row_group_dot_fn(type, isa)) out.push_back(isa);
    return out;
}

constexpr GgmlType kInterleavedTypes[] = {GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q8_0,
                                          GgmlType::Q4_K, GgmlType::Q6_K};

std::string name(GgmlType t) {
    return std::string(type_name(t));
}

// A row length for `type` near n: n itself for the 32-element blocks, whole 256-element blocks
// (at least one) for Q4_K.
int64_t fit(GgmlType type, int64_t n) {
    const int64_t block = type_traits(type).block_elems;
    return std::max(block, n / block * block);
}

TEST(CpuInterleave, RoundTripsEveryRow) {
    for (GgmlType type : kInterleavedTypes) {
        std::mt19937 rng(11);
        const int64_t n_in = fit(type, 768), n_out = 3 * kGroupRows;
        const std::vector<uint8_t> rows = random_rows(type, n_in, n_out, rng);
        const std::vector<uint8_t> groups = interleaved(type, rows, n_in, n_out);
        EXPECT_NE(groups, rows) << name(type);  // the layout really differs
        const size_t row = *row_bytes(type, n_in);
        for (int64_t o = 0; o < n_out; ++o) {
            std::vector<uint8_t> back(row);
            deinterleave_row(type, groups.data(), o, n_in, back.data());
            EXPECT_EQ(0, std::memcmp(back.data(), rows.data() + o * row, row))
                << name(type) << " row " << o;
        }
    }
}

TEST(CpuInterleave, OnlyQ4_1Q5_0Q8_0AndQ4_KInWholeGroups) {
    EXPECT_TRUE(interleavable(GgmlType::Q4_1, 8));
    EXPECT_FALSE(interleavable(GgmlType::Q4_1, 4));
    EXPECT_TRUE(interleavable(GgmlType::Q4_1, 576));
    EXPECT_TRUE(interleavable(GgmlType::Q5_0, 2048));
    EXPECT_TRUE(interleavable(GgmlType::Q8_0, 49152));
    EXPECT_FALSE(interleavable(GgmlType::Q4_1, 6));
    EXPECT_FALSE(interleavable(GgmlType::Q5_0, 6));
    EXPECT_FALSE(interleavable(GgmlType::Q8_0, 6));
    EXPECT_FALSE(interleavable(GgmlType::Q4_1, 0));
    EXPECT_FALSE(interleavable(GgmlType::Q4_0, 576));
    EXPECT_FALSE(interleavable(GgmlType::F16, 576));
    EXPECT_TRUE(interleavable(GgmlType::Q4_K, 2048));
    EXPECT_FALSE(interleavable(GgmlType::Q4_K, 12));
    EXPECT_TRUE(interleavable(GgmlType::Q6_K, 2048));
    EXPECT_FALSE(interleavable(GgmlType::Q5_K, 2048));
    std::vector<uint8_t> buf(4096);
    EXPECT_THROW(interleave_rows(GgmlType::Q4_1, buf.data(), 6, 32, buf.data() + 2048), Error);
    EXPECT_THROW(interleave_rows(GgmlType::Q4_1, buf.data(), 4, 48, buf.data() + 2048), Error);
    EXPECT_THROW(interleave_rows(GgmlType::Q4_0, buf.data(), 4, 32, buf.data() + 2048), Error);
    EXPECT_THROW(deinterleave_row(GgmlType::Q4_1, buf.data(), -1, 32, buf.data() + 2048), Error);
    // Q4_K rows are whole 256-element super-blocks
    EXPECT_THROW(interleave_rows(GgmlType::Q4_K, buf.data(), 8, 32, buf.data() + 2048), Error);
}

// The group kernels' activations: the partner blocks with their scales as floats, the same
// values, Q8_0's with 16 times its quants' sum and Q8_K's with its 16-element sums added in
// pairs; converting in place (the partner row at the end of the buffer) gives the same bytes.
TEST(CpuInterleave, GroupActivationsArePartnerBlocksWidened) {
    for (GgmlType type : kInterleavedTypes) {
        std::mt19937 rng(12);
        for (int64_t len : {32, 576, 577}) {
            // 577: 576 random values and a block with inf and NaN, which the SIMD quantizers
            // hand to the reference.
            const int64_t n = fit(type, len == 577 ? 576 : len);
            std::vector<float> x = test::random_floats(n, rng);
            if (len == 577) {
                x[40] = std::numeric_limits<float>::infinity();
                x[45] = std::numeric_limits<float>::quiet_NaN();
            }
            const GgmlType partner = vec_dot_partner(type);
            const std::vector<uint8_t> narrow = test::quantized(partner, x);
            std::vector<uint8_t> wide(group_x_row_bytes(type, n)), direct(wide.size());
            widen_partner_row(type, narrow.data(), wide.data(), n);
            quantize_group_x_row(type, x.data(), direct.data(), n);
            EXPECT_EQ(direct, wide) << name(type) << " n=" << n;
            const size_t nb = size_t(n / type_traits(type).block_elems);
            for (size_t b = 0; b < nb; ++b) {
                if (type == GgmlType::Q6_K) {  // Q8_K blocks as they are
                    EXPECT_EQ(wide, narrow);
                } else if (type == GgmlType::Q4_K) {
                    const auto& in = reinterpret_cast<const BlockQ8_K*>(narrow.data())[b];
                    const auto& out = reinterpret_cast<const BlockQ8_KWide*>(wide.data())[b];
                    EXPECT_EQ(std::bit_cast<uint32_t>(out.d), std::bit_cast<uint32_t>(in.d));
                    for (int j = 0; j < 8; ++j)
                        EXPECT_EQ(out.bsum32[j], in.bsums[2 * j] + in.bsums[2 * j + 1]) << j;
                    EXPECT_EQ(0, std::memcmp(out.qs, in.qs, kQK_K));
                } else if (type == GgmlType::Q4_1) {
                    const auto& in = reinterpret_cast<const BlockQ8_1*>(narrow.data())[b];
                    const auto& out = reinterpret_cast<const BlockQ8_1Wide*>(wide.data())[b];
                    EXPECT_EQ(out.d, fp16_to_fp32(in.d));
                    EXPECT_EQ(out.s, fp16_to_fp32(in.s));
                    EXPECT_EQ(0, std::memcmp(out.qs, in.qs, kQK));
                } else {
                    const auto& in = reinterpret_cast<const BlockQ8_0*>(narrow.data())[b];
                    const auto& out = reinterpret_cast<const BlockQ8_0Wide*>(wide.data())[b];
                    EXPECT_EQ(out.d, fp16_to_fp32(in.d));
                    int32_t sum = 0;
                    for (const int8_t q : in.qs) sum += q;
                    EXPECT_EQ(out.sum16, 16 * sum);
                    EXPECT_EQ(0, std::memcmp(out.qs, in.qs, kQK));
                    int32_t a = 0;
                    for (int i : {0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23})
                        a += in.qs[i];
                    EXPECT_EQ(out.offset_ab[0], -128 * a);
                    EXPECT_EQ(out.offset_ab[1], -128 * (sum - a));
                    const int order[kQK] = {0,  1,  2,  3,  8,  9,  10, 11, 4,  5,  6,
                                            7,  12, 13, 14, 15, 16, 17, 18, 19, 24, 25,
                                            26, 27, 20, 21, 22, 23, 28, 29, 30, 31};
                    for (int i = 0; i < kQK; ++i) EXPECT_EQ(out.qs_ab[i], in.qs[order[i]]) << i;
                }
            }
        }
    }
    EXPECT_THROW(group_x_row_bytes(GgmlType::Q4_0, 32), Error);
    EXPECT_THROW(group_x_row_bytes(GgmlType::Q4_1, 48), Error);
    EXPECT_THROW(group_x_row_bytes(GgmlType::Q4_K, 32), Error);
}

TEST(CpuKernelRowGroupDot, OnlySimdHasGroupKernels) {
    EXPECT_EQ(row_group_dot_fn(GgmlType::Q4_1, CpuIsa::Generic), nullptr);
    EXPECT_EQ(row_group_dot_fn(GgmlType::Q4_0, best_cpu_isa()), nullptr);
    for (CpuIsa isa : test::supported_isas()) {
        if (isa == CpuIsa::Generic) continue;
        for (GgmlType type : kInterleavedTypes)
            EXPECT_NE(row_group_dot_fn(type, isa), nullptr) << name(type) << cpu_isa_name(isa);
    }
}

// Rows of extreme blocks: every quant at its largest or smallest (Q4_1 15 or 0; Q5_0 15 or -16,
// |w| = 16; Q8_0 127 or -128, which ggml never writes but a file may hold; Q4_K 15 or 0 with
// every 6-bit scale and min at 63; Q6_K 0 or 63 with scales 127 or -128) against activations of
// ±127 (Q8_K: 127 or -128, which its quantizer writes): the largest integer sums the int16 steps
// must not saturate.
void make_extreme(GgmlType type, std::vector<uint8_t>& rows) {
    const size_t block = type_traits(type).block_bytes;
    for (size_t b = 0; b < rows.size() / block; ++b) {
        const uint8_t fill = b % 3 == 0 ? 0x00 : 0xFF;
        if (type == GgmlType::Q4_K) {
            auto* q = reinterpret_cast<BlockQ4_K*>(rows.data()) + b;
            std::memset(q->qs, fill, sizeof(q->qs));
            std::memset(q->scales, 0xFF, sizeof(q->scales));
        } else if (type == GgmlType::Q6_K) {  // q 0 or 63 with scales -128 or 127
            auto* q = reinterpret_cast<BlockQ6_K*>(rows.data()) + b;
            std::memset(q->ql, fill, sizeof(q->ql));
            std::memset(q->qh, fill, sizeof(q->qh));
            std::memset(q->scales, b % 2 ? 0x80 : 0x7F, sizeof(q->scales));
        } else if (type == GgmlType::Q4_1) {
            auto* q = reinterpret_cast<BlockQ4_1*>(rows.data()) + b;
            std::memset(q->qs, fill, sizeof(q->qs));
        } else if (type == GgmlType::Q8_0) {
            auto* q = reinterpret_cast<BlockQ8_0*>(rows.data()) + b;
            std::memset(q->qs, b % 3 == 0 ? 0x7F : 0x80, sizeof(q->qs));
        } else {
            auto* q = reinterpret_cast<BlockQ5_0*>(rows.data()) + b;
            std::memset(q->qs, fill, sizeof(q->qs));
            std::memset(q->qh, fill, sizeof(q->qh));
        }
    }
}

// ±127 in every activation quant (a Q8_0 or Q8_1 block ends with its 32 quants); 127 or -128 in
// a Q8_K block's, with its 16-element sums to match.
void make_extreme_partner(GgmlType type, std::vector<uint8_t>& xs, size_t stride, int64_t n) {
    if (type == GgmlType::Q4_K || type == GgmlType::Q6_K) {
        for (int t = 0; t < kMaxDotRows; ++t) {
            auto* blocks = reinterpret_cast<BlockQ8_K*>(xs.data() + t * stride);
            for (int64_t b = 0; b < n / kQK_K; ++b) {
                const int8_t q = t % 2 ? -128 : 127;
                std::memset(blocks[b].qs, static_cast<uint8_t>(q), kQK_K);
                for (int16_t& s : blocks[b].bsums) s = int16_t(16 * q);
            }
        }
        return;
    }
    const size_t block = type_traits(vec_dot_partner(type)).block_bytes;
    const size_t qs = block - kQK;
    for (int t = 0; t < kMaxDotRows; ++t)
        for (int64_t b = 0; b < n / kQK; ++b)
            std::memset(xs.data() + t * stride + b * block + qs, t % 2 ? 0x81 : 0x7F, kQK);
}

// Rows from random floats (test::random_weight_row), and extreme rows.
TEST(CpuKernelRowGroupDot, MatchesGenericRowsWithinRounding) {
    for (GgmlType type : kInterleavedTypes) {
        const std::vector<CpuIsa> isas = isas_with_group_kernel(type);
        if (isas.empty()) GTEST_SKIP() << "no row-group kernel on this CPU or build";
        std::mt19937 rng(5);
        for (int64_t len : {32, 576, 1536}) {
            const int64_t n = fit(type, len);
            for (bool extreme : {false, true}) {
                std::vector<uint8_t> rows = random_rows(type, n, kGroupRows, rng);
                if (extreme) make_extreme(type, rows);
                const std::vector<uint8_t> groups = interleaved(type, rows, n, kGroupRows);
                const size_t row = *row_bytes(type, n);
                const size_t stride = *row_bytes(vec_dot_partner(type), n) + 36;  // padded
                std::vector<uint8_t> xs = partner_rows(type, n, stride, rng);
                if (extreme) make_extreme_partner(type, xs, stride, n);
                const size_t wide_stride = group_x_row_bytes(type, n) + 40;  // padded
                const std::vector<uint8_t> xw = widened(type, xs, stride, n, wide_stride);
                for (CpuIsa isa : isas) {
                    float got[kGroupRows * kMaxDotRows];
                    row_group_dot_fn(type, isa)(groups.data(), xw.data(), wide_stride, kMaxDotRows,
                                                n, got);
                    for (int r = 0; r < kGroupRows; ++r) {
                        float want[kMaxDotRows];
                        row_dot_fn(type, CpuIsa::Generic)(rows.data() + r * row, xs.data(), stride,
                                                          kMaxDotRows, n, want);
                        const std::vector<float> w_hat = [&] {
                            std::vector<float> v(n);
                            dequantize_row(type, rows.data() + r * row, v.data(), n);
                            return v;
                        }();
                        for (int t = 0; t < kMaxDotRows; ++t) {
                            std::vector<float> x_hat(n);
                            dequantize_row(vec_dot_partner(type), xs.data() + t * stride,
                                           x_hat.data(), n);
                            double scale = 0;
                            for (int64_t i = 0; i < n; ++i)
                                scale += std::fabs(double(w_hat[i]) * x_hat[i]);
                            EXPECT_LE(std::fabs(double(got[r * kMaxDotRows + t]) - want[t]),
                                      1e-6 * scale)
                                << name(type) << " " << cpu_isa_name(isa) << " n=" << n
                                << " extreme=" << extreme << " row " << r << " token " << t << ": "
                                << got[r * kMaxDotRows + t] << " vs " << want[t];
                        }
                    }
                }
            }
        }
    }
}

TEST(CpuKernelRowGroupDot, TokenResultDoesNotDependOnTileOrIsa) {
    for (GgmlType type : kInterleavedTypes) {
        const std::vector<CpuIsa> isas = isas_with_group_kernel(type);
        if (isas.empty()) GTEST_SKIP() << "no row-group kernel on this CPU or build";
        std::mt19937 rng(6);
        const int64_t n = 1536;
        const std::vector<uint8_t> groups =
            interleaved(type, random_rows(type, n, kGroupRows, rng), n, kGroupRows);
        const size_t narrow = *row_bytes(vec_dot_partner(type), n);
        const size_t stride = group_x_row_bytes(type, n);
        const std::vector<uint8_t> xs =
            widened(type, partner_rows(type, n, narrow, rng), narrow, n, stride);
        float first[kGroupRows * kMaxDotRows];  // the first ISA's single-token results
        for (CpuIsa isa : isas) {
            const RowGroupDotFn fn = row_group_dot_fn(type, isa);
            float single[kGroupRows * kMaxDotRows];
            for (int t = 0; t < kMaxDotRows; ++t) {
                float one[kGroupRows * kMaxDotRows];
                fn(groups.data(), xs.data() + t * stride, 0, 1, n, one);
                for (int r = 0; r < kGroupRows; ++r)
                    single[r * kMaxDotRows + t] = one[r * kMaxDotRows];
            }
            for (int n_x = 2; n_x <= kMaxDotRows; ++n_x) {
                float tile[kGroupRows * kMaxDotRows];
                fn(groups.data(), xs.data(), stride, n_x, n, tile);
                for (int r = 0; r < kGroupRows; ++r)
                    for (int t = 0; t < n_x; ++t)
                        EXPECT_EQ(std::bit_cast<uint32_t>(tile[r * kMaxDotRows + t]),
                                  std::bit_cast<uint32_t>(single[r * kMaxDotRows + t]))
                            << name(type) << " " << cpu_isa_name(isa) << " n_x=" << n_x << " row "
                            << r << " token " << t;
            }
            if (isa == isas.front()) {
                std::memcpy(first, single, sizeof(first));
                continue;
            }
            for (int i = 0; i < kGroupRows * kMaxDotRows; ++i)
                EXPECT_EQ(std::bit_cast<uint32_t>(single[i]), std::bit_cast<uint32_t>(first[i]))
                    << name(type) << " " << cpu_isa_name(isa) << " vs "
                    << cpu_isa_name(isas.front()) << " at " << i;
        }
    }
}

TEST(CpuKernelRowGroupDot, PairKernelsOnlyOnAvx512ForQ4_1Q5_0Q4_KAndQ6_K) {
    EXPECT_EQ(row_group_pair_dot_fn(GgmlType::Q4_1, CpuIsa::Generic), nullptr);
    for (CpuIsa isa : test::supported_isas()) {
        EXPECT_EQ(row_group_pair_dot_fn(GgmlType::Q8_0, isa), nullptr) << cpu_isa_name(isa);
        EXPECT_EQ(row_group_pair_dot_fn(GgmlType::Q4_0, isa), nullptr) << cpu_isa_name(isa);
        for (GgmlType type : {GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q4_K, GgmlType::Q6_K})
            EXPECT_EQ(row_group_pair_dot_fn(type, isa) != nullptr, isa == CpuIsa::Avx512)
                << name(type) << " " << cpu_isa_name(isa);
    }
}

// Two adjacent groups through the pair kernel: each row the same bits as the one-group kernel
// gives it, for every tile size, on random and extreme rows.
TEST(CpuKernelRowGroupDot, PairKernelGivesEachRowTheGroupKernelsBits) {
    bool ran = false;
    for (GgmlType type : {GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q4_K, GgmlType::Q6_K}) {
        for (CpuIsa isa : test::supported_isas()) {
            const RowGroupDotFn pair = row_group_pair_dot_fn(type, isa);
            if (!pair) continue;
            ran = true;
            const RowGroupDotFn group = row_group_dot_fn(type, isa);
            std::mt19937 rng(7);
            for (int64_t len : {32, 1536}) {
                const int64_t n = fit(type, len);
                for (bool extreme : {false, true}) {
                    std::vector<uint8_t> rows = random_rows(type, n, 2 * kGroupRows, rng);
                    if (extreme) make_extreme(type, rows);
                    const std::vector<uint8_t> groups = interleaved(type, rows, n, 2 * kGroupRows);
                    const size_t group_bytes = kGroupRows * *row_bytes(type, n);
                    const size_t narrow = *row_bytes(vec_dot_partner(type), n);
                    std::vector<uint8_t> xs = partner_rows(type, n, narrow, rng);
                    if (extreme) make_extreme_partner(type, xs, narrow, n);
                    const size_t stride = group_x_row_bytes(type, n);
                    const std::vector<uint8_t> xw = widened(type, xs, narrow, n, stride);
                    for (int n_x = 1; n_x <= kMaxDotRows; ++n_x) {
                        float got[2 * kGroupRows * kMaxDotRows];
                        pair(groups.data(), xw.data(), stride, n_x, n, got);
                        for (int g = 0; g < 2; ++g) {
                            float want[kGroupRows * kMaxDotRows];
                            group(groups.data() + g * group_bytes, xw.data(), stride, n_x, n, want);
                            for (int r = 0; r < kGroupRows; ++r)
                                for (int t = 0; t < n_x; ++t)
                                    EXPECT_EQ(std::bit_cast<uint32_t>(
                                                  got[(g * kGroupRows + r) * kMaxDotRows + t]),
                                              std::bit_cast<uint32_t>(want[r * kMaxDotRows + t]))
                                        << name(type) << " n=" << n << " extreme=" << extreme
                                        << " n_x=" << n_x << " group " << g << " row " << r
                                        << " token " << t;
                        }
                    }
                }
            }
        }
    }
    if (!ran) GTEST_SKIP() << "no pair kernel on this CPU or build (AVX-512 VNNI only)";
}

}  // namespace
}  // namespace fluoro::cpu
