// CUDA elementwise/row-wise ops (backend/cuda/cuda_ops.h) vs the CPU backend, the reference.
//
// Every comparison is max |gpu - cpu| <= tol * (1 + |cpu|) per element, with tol:
// - 1e-6 for add, scale, add_bias, gather_rows: the same single IEEE operation (or a copy) on both
//   sides, so in practice exact;
// - 2e-6 for rms_norm: the same f32 arithmetic; only the order of the double sum of squares
//   differs, which can move the scale by an ulp at most;
// - 1e-5 for rope and rope_shift_kv (F32 rows): the same f32 theta stepping, but CUDA's precise
//   cosf/sinf (<= 2 ulp) are not glibc's; positions up to 32768;
// - 1e-5 for swiglu, geglu_tanh, softcap: CUDA's expf/tanhf (<= 2 ulp) against the CPU's exp
//   (libm, or a polynomial of relative error < 3e-7 in the SIMD tables) and its tanh computed as
//   1 - 2 / (e^2y + 1), whose absolute error near ±1 is a few 1e-8 (times cap or |x·u|).
// rope_shift_kv on F16 rows also allows one fp16 ulp (2^-10 |cpu|) for a value whose f32
// rotation rounds to the other fp16 neighbour, and at most 1% of elements may differ in bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/device_buffer.h"
#include "core/error.h"
#include "cuda_test_support.h"
#include "tensor/fp16.h"
#include "tensor/ggml_type.h"

namespace fluoro::cuda {
namespace {

constexpr double kExactTol = 1e-6;
constexpr double kNormTol = 2e-6;
constexpr double kRopeTol = 1e-5;
constexpr double kActivationTol = 1e-5;

constexpr int64_t kRows[] = {1, 7, 300};
constexpr int64_t kWidths[] = {576, 640, 1024};

std::vector<float> random_floats(size_t n, float lo, float hi, std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

template <typename T>
DeviceBuffer<T> to_device(const std::vector<T>& host) {
    DeviceBuffer<T> d(host.size());
    d.copy_from_host(host);
    return d;
}

template <typename T>
std::vector<T> to_host(const DeviceBuffer<T>& d) {
    FLUORO_CUDA_CHECK(cudaDeviceSynchronize());  // surfaces a kernel fault here, not later
    std::vector<T> host(d.size());
    d.copy_to_host(host);
    return host;
}

// Fails (with the worst element and the first few offenders) unless every element satisfies
// |got - want| <= tol * (1 + |want|) + extra_rel * |want|. NaN in either fails.
void expect_close(std::span<const float> got, std::span<const float> want, double tol,
                  int64_t width, const std::string& what, double extra_rel = 0.0) {
    ASSERT_EQ(got.size(), want.size()) << what;
    size_t bad = 0, worst = 0;
    double worst_ratio = 0.0;
    std::ostringstream first;
    for (size_t i = 0; i < got.size(); ++i) {
        const double g = got[i], w = want[i];
        const double bound = tol * (1.0 + std::fabs(w)) + extra_rel * std::fabs(w);
        const double err = std::fabs(g - w);
        const double ratio = err / bound;
        if (!(err <= bound)) {
            if (bad++ < 5) {
                first << "\n  [" << i / size_t(width) << ", " << i % size_t(width) << "]: gpu " << g
                      << ", cpu " << w << ", |diff| " << err << " > " << bound;
            }
        }
        if (!(ratio <= worst_ratio)) {
            worst_ratio = ratio;
            worst = i;
        }
    }
    EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements outside tol "
                       << tol << " * (1 + |cpu|); worst at [" << worst / size_t(width) << ", "
                       << worst % size_t(width) << "]: gpu " << got[worst] << ", cpu "
                       << want[worst] << first.str();
}

Weight f32_weight(std::vector<float>& values, const char* name) {
    Weight w;
    w.name = name;
    w.type = GgmlType::F32;
    w.ne = {int64_t(values.size()), 1, 1, 1};
    w.data = values.data();
    w.row_bytes = values.size() * sizeof(float);
    return w;
}

// values rounded to `type` (F32, F16, BF16): the raw bytes for the GPU and the exact f32 values
// they hold for the CPU reference (which takes F32 only).
struct TypedRow {
    std::vector<uint8_t> bytes;
    std::vector<float> values;
};

TypedRow typed_row(const std::vector<float>& src, GgmlType type) {
    TypedRow row;
    row.values.resize(src.size());
    if (type == GgmlType::F32) {
        row.values = src;
        row.bytes.resize(src.size() * sizeof(float));
        std::memcpy(row.bytes.data(), src.data(), row.bytes.size());
        return row;
    }
    std::vector<uint16_t> bits(src.size());
    for (size_t i = 0; i < src.size(); ++i) {
        if (type == GgmlType::F16) {
            bits[i] = fp32_to_fp16(src[i]);
            row.values[i] = fp16_to_fp32(bits[i]);
        } else {
            bits[i] = fp32_to_bf16(src[i]);
            row.values[i] = bf16_to_fp32(bits[i]);
        }
    }
    row.bytes.resize(bits.size() * sizeof(uint16_t));
    std::memcpy(row.bytes.data(), bits.data(), row.bytes.size());
    return row;
}

constexpr GgmlType kWeightTypes[] = {GgmlType::F32, GgmlType::F16, GgmlType::BF16};

std::string shape_str(int64_t rows, int64_t width) {
    return std::to_string(rows) + "x" + std::to_string(width);
}

using CudaOpsTest = test::CudaTest<>;

// --- rms_norm ---

TEST_F(CudaOpsTest, RmsNormMatchesCpu) {
    struct NormShape {
        int64_t width, group;
    };
    // Whole-row norms (one block per row) and per-head norms of 64 / 128 / 256 (one warp each).
    const NormShape shapes[] = {{576, 576}, {640, 640}, {1024, 1024}, {1024, 64},  {1024, 256},
                                {576, 64},  {640, 64},  {2048, 128},  {5120, 5120}};
    cpu::CpuBackend be(1);
    std::mt19937 rng(1234);
    for (const int64_t rows : kRows) {
        for (const NormShape& s : shapes) {
            for (const GgmlType type : kWeightTypes) {
                const std::string what = "rms_norm " + shape_str(rows, s.width) + " group " +
                                         std::to_string(s.group) + " w " +
                                         std::string(type_name(type));
                SCOPED_TRACE(what);
                const float eps = s.group == 64 ? 1e-5f : 1e-6f;
                std::vector<float> x = random_floats(size_t(rows * s.width), -3.0f, 3.0f, rng);
                for (int64_t r = 0; r < rows; ++r) {  // magnitudes from 1e-2 to 1e2 across rows
                    const float m = std::pow(10.0f, float(r % 5) - 2.0f);
                    for (int64_t i = 0; i < s.width; ++i) x[size_t(r * s.width + i)] *= m;
                }
                TypedRow w = typed_row(random_floats(size_t(s.group), -2.0f, 2.0f, rng), type);

                std::vector<float> want(x.size());
                be.rms_norm(Act{x.data(), rows, s.width}, f32_weight(w.values, "norm"), eps,
                            Act{want.data(), rows, s.width});

                DeviceBuffer<float> d_x = to_device(x);
                DeviceBuffer<uint8_t> d_w = to_device(w.bytes);
                DeviceBuffer<float> d_y(x.size());
                cuda::rms_norm(d_x.data(), rows, s.width, d_w.data(), type, s.group, eps,
                               d_y.data(), nullptr);
                expect_close(to_host(d_y), want, kNormTol, s.width, what);

                // In place (x == y), as the forward pass may call it.
                cuda::rms_norm(d_x.data(), rows, s.width, d_w.data(), type, s.group, eps,
                               d_x.data(), nullptr);
                expect_close(to_host(d_x), want, kNormTol, s.width, what + " in place");
            }
        }
    }
}

// add_rms_norm is add() then rms_norm() bit for bit: fused (rows wider than a warp's group) and
// not (narrow rows), with the output over the addend as the forward pass calls it.
TEST_F(CudaOpsTest, AddRmsNormEqualsAddThenNorm) {
    std::mt19937 rng(4321);
    for (const int64_t rows : kRows) {
        for (const int64_t width : {int64_t(576), int64_t(640), int64_t(200)}) {
            for (const GgmlType type : kWeightTypes) {
                const std::string what =
                    "add_rms_norm " + shape_str(rows, width) + " w " + std::string(type_name(type));
                SCOPED_TRACE(what);
                const std::vector<float> x = random_floats(size_t(rows * width), -30.f, 30.f, rng),
                                         y = random_floats(size_t(rows * width), -3.f, 3.f, rng);
                TypedRow w = typed_row(random_floats(size_t(width), -2.0f, 2.0f, rng), type);
                DeviceBuffer<uint8_t> d_w = to_device(w.bytes);
                DeviceBuffer<float> x1 = to_device(x), y1 = to_device(y), out1(x.size());
                cuda::add(x1.data(), y1.data(), rows * width, nullptr);
                cuda::rms_norm(x1.data(), rows, width, d_w.data(), type, width, 1e-6f, out1.data(),
                               nullptr);
                DeviceBuffer<float> x2 = to_device(x), y2 = to_device(y);
                cuda::add_rms_norm(x2.data(), y2.data(), rows, width, d_w.data(), type, 1e-6f,
                                   y2.data(), nullptr);
                EXPECT_EQ(to_host(x2), to_host(x1)) << "sum";
                EXPECT_EQ(to_host(y2), to_host(out1)) << "norm";
            }
        }
    }
}

// --- rope ---

struct RopeShape {
    int64_t n_head, head_dim, n_rot;
};
// Full rotation, and partial (n_rot < head_dim) including a head_dim that is not a power of 2.
constexpr RopeShape kRopeShapes[] = {{8, 64, 64}, {4, 128, 128}, {2, 128, 64}, {3, 80, 32}};

TEST_F(CudaOpsTest, RopeMatchesCpu) {
    cpu::CpuBackend be(1);
    std::mt19937 rng(99);
    for (const int64_t rows : kRows) {
        for (const RopeShape& s : kRopeShapes) {
            for (const float base : {10000.0f, 1000000.0f}) {
                for (const float fscale : {1.0f, 0.25f}) {
                    for (const bool neox : {false, true}) {
                        std::ostringstream name;
                        name << "rope " << rows << " rows, " << s.n_head << " heads x "
                             << s.head_dim << " n_rot " << s.n_rot << " base " << base << " scale "
                             << fscale << (neox ? " neox" : " norm");
                        const std::string what = name.str();
                        SCOPED_TRACE(what);
                        const int64_t width = s.n_head * s.head_dim;
                        std::vector<float> x =
                            random_floats(size_t(rows * width), -2.0f, 2.0f, rng);
                        std::uniform_int_distribution<int32_t> pos_dist(0, 32768);
                        std::vector<int32_t> pos(static_cast<size_t>(rows));
                        for (auto& p : pos) p = pos_dist(rng);
                        pos.back() = 32768;
                        if (rows > 1) pos.front() = 0;

                        DeviceBuffer<float> d_x = to_device(x);
                        DeviceBuffer<int32_t> d_pos = to_device(pos);
                        cuda::rope(d_x.data(), rows, s.n_head, s.head_dim, s.n_rot, base, fscale,
                                   neox, d_pos.data(), nullptr);

                        RopeParams p;
                        p.n_rot = s.n_rot;
                        p.freq_base = base;
                        p.freq_scale = fscale;
                        p.mode = neox ? RopeMode::Neox : RopeMode::Norm;
                        be.rope(Act{x.data(), rows, width}, s.n_head, s.head_dim, p, pos);
                        expect_close(to_host(d_x), x, kRopeTol, width, what);
                    }
                }
            }
        }
    }
}

// Scaled RoPE (llama3 per-pair factors, linear, YaRN): the kernels compute the angles with the
// CPU's own rope_cos_sin (backend/rope.h), so they match the CPU backend as plain RoPE does.
TEST_F(CudaOpsTest, ScaledRopeMatchesCpu) {
    cpu::CpuBackend be(1);
    std::mt19937 rng(5);
    const int64_t rows = 7, n_head = 4, hd = 64;
    std::vector<float> factors(size_t(hd / 2));
    for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + 0.25f * float(i);
    DeviceBuffer<float> d_factors = to_device(factors);
    Weight cpu_w, dev_w;
    cpu_w.name = dev_w.name = "rope_freqs.weight";
    cpu_w.ne[0] = dev_w.ne[0] = int64_t(factors.size());
    cpu_w.data = factors.data();
    dev_w.data = d_factors.data();
    for (const int kind : {0, 1, 2}) {  // llama3 factors, linear, yarn
        for (const bool neox : {false, true}) {
            SCOPED_TRACE("kind " + std::to_string(kind) + (neox ? " neox" : " norm"));
            RopeParams p;
            p.n_rot = hd;
            p.freq_base = 500000.0;
            p.mode = neox ? RopeMode::Neox : RopeMode::Norm;
            if (kind == 1) p.freq_scale = 0.25;
            if (kind == 2) {
                p.freq_scale = 0.25;
                p.ext_factor = 1.0f;
                p.n_ctx_orig = 4096;
            }
            const int64_t width = n_head * hd;
            std::vector<float> x = random_floats(size_t(rows * width), -2.0f, 2.0f, rng);
            const std::vector<int32_t> pos = {0, 1, 100, 4095, 4096, 20000, 131071};
            DeviceBuffer<float> d_x = to_device(x);
            DeviceBuffer<int32_t> d_pos = to_device(pos);
            RopeArgs a;
            a.n_rot = hd;
            a.coeffs = rope_coeffs(p);
            a.factors = kind == 0 ? d_factors.data() : nullptr;
            a.neox = neox;
            cuda::rope(d_x.data(), rows, n_head, hd, a, d_pos.data(), nullptr);
            if (kind == 0) p.freq_factors = &cpu_w;
            be.rope(Act{x.data(), rows, width}, n_head, hd, p, pos);
            expect_close(to_host(d_x), x, kRopeTol, width, "scaled rope");
        }
    }
}

// rope_pair (queries and keys in one launch) is rope() of each, bit for bit.
TEST_F(CudaOpsTest, RopePairEqualsTwoRopes) {
    std::mt19937 rng(77);
    for (const bool neox : {false, true}) {
        const int64_t rows = 5, hd = 64, nq = 9, nk = 3;
        const std::vector<float> q = random_floats(size_t(rows * nq * hd), -2.f, 2.f, rng),
                                 k = random_floats(size_t(rows * nk * hd), -2.f, 2.f, rng);
        const std::vector<int32_t> pos = {0, 1, 17, 4000, 32768};
        DeviceBuffer<int32_t> d_pos = to_device(pos);
        DeviceBuffer<float> q1 = to_device(q), k1 = to_device(k), q2 = to_device(q),
                            k2 = to_device(k);
        cuda::rope(q1.data(), rows, nq, hd, hd, 10000.f, 1.f, neox, d_pos.data(), nullptr);
        cuda::rope(k1.data(), rows, nk, hd, hd, 10000.f, 1.f, neox, d_pos.data(), nullptr);
        cuda::rope_pair(q2.data(), nq, k2.data(), nk, rows, hd, hd, 10000.f, 1.f, neox,
                        d_pos.data(), nullptr);
        EXPECT_EQ(to_host(q2), to_host(q1)) << "neox " << neox;
        EXPECT_EQ(to_host(k2), to_host(k1)) << "neox " << neox;
    }
}

// --- rope_shift_kv ---

// A pool of K rows (with padding after each row's heads, which must stay untouched); a subset of
// rows is rotated by per-row deltas. A raw row rotated by delta is rope() at position delta, so
// the CPU reference is rope() on those rows (for F16: on their f32 values, rounded back to fp16
// as CpuBackend::kv_rope_shift stores them).
TEST_F(CudaOpsTest, RopeShiftKvMatchesCpuRope) {
    struct ShiftCase {
        int64_t n_head_kv, head_dim, n_rot;
        bool neox;
        float base, fscale;
    };
    const ShiftCase cases[] = {{1, 64, 64, false, 10000.0f, 1.0f},
                               {4, 128, 128, true, 1000000.0f, 1.0f},
                               {2, 128, 64, true, 10000.0f, 0.25f},
                               {8, 64, 32, false, 1000000.0f, 0.25f}};
    constexpr int64_t kPoolRows = 50, kShifted = 20;
    constexpr size_t kPadBytes = 32;
    cpu::CpuBackend be(1);
    std::mt19937 rng(7);
    for (const ShiftCase& c : cases) {
        for (const KvElem elem : {KvElem::F32, KvElem::F16}) {
            const bool f16 = elem == KvElem::F16;
            std::ostringstream name;
            name << "rope_shift_kv " << (f16 ? "F16" : "F32") << ", " << c.n_head_kv << " heads x "
                 << c.head_dim << " n_rot " << c.n_rot << " base " << c.base << " scale "
                 << c.fscale << (c.neox ? " neox" : " norm");
            const std::string what = name.str();
            SCOPED_TRACE(what);
            const int64_t width = c.n_head_kv * c.head_dim;
            const size_t elem_bytes = f16 ? 2 : 4;
            const size_t row_bytes = size_t(width) * elem_bytes + kPadBytes;

            std::vector<uint8_t> pool(size_t(kPoolRows) * row_bytes);
            std::uniform_int_distribution<int> byte(0, 255);
            for (auto& b : pool) b = uint8_t(byte(rng));  // padding keeps these random bytes
            // Row values as f32 (what a row holds), written into the pool in its element type.
            std::vector<float> values = random_floats(size_t(kPoolRows * width), -2.0f, 2.0f, rng);
            for (int64_t r = 0; r < kPoolRows; ++r) {
                uint8_t* dst = pool.data() + size_t(r) * row_bytes;
                for (int64_t i = 0; i < width; ++i) {
                    float& v = values[size_t(r * width + i)];
                    if (f16) {
                        const uint16_t h = fp32_to_fp16(v);
                        v = fp16_to_fp32(h);
                        std::memcpy(dst + size_t(i) * 2, &h, 2);
                    } else {
                        std::memcpy(dst + size_t(i) * 4, &v, 4);
                    }
                }
            }

            // kShifted distinct rows; deltas in runs (as a compaction makes), negative and
            // positive, including 0.
            std::vector<int32_t> order(kPoolRows);
            std::iota(order.begin(), order.end(), 0);
            std::shuffle(order.begin(), order.end(), rng);
            const std::vector<int32_t> rows(order.begin(), order.begin() + kShifted);
            std::vector<int32_t> deltas(kShifted);
            std::uniform_int_distribution<int32_t> delta_dist(-32768, 32768);
            for (int64_t i = 0; i < kShifted; ++i)
                deltas[size_t(i)] = i < 8 ? -1234 : i == 8 ? 0 : delta_dist(rng);

            // CPU: rope at the deltas on the selected rows' values.
            std::vector<float> want(size_t(kShifted * width));
            for (int64_t i = 0; i < kShifted; ++i)
                std::copy_n(values.begin() + rows[size_t(i)] * width, width,
                            want.begin() + i * width);
            RopeParams p;
            p.n_rot = c.n_rot;
            p.freq_base = c.base;
            p.freq_scale = c.fscale;
            p.mode = c.neox ? RopeMode::Neox : RopeMode::Norm;
            be.rope(Act{want.data(), kShifted, width}, c.n_head_kv, c.head_dim, p, deltas);
            if (f16)
                for (auto& v : want) v = fp16_to_fp32(fp32_to_fp16(v));

            DeviceBuffer<uint8_t> d_pool = to_device(pool);
            DeviceBuffer<int32_t> d_rows = to_device(rows);
            DeviceBuffer<int32_t> d_deltas = to_device(deltas);
            KvLayerDev layer;
            layer.k = reinterpret_cast<std::byte*>(d_pool.data());
            layer.k_row_bytes = row_bytes;
            layer.elem = elem;
            cuda::rope_shift_kv(layer, c.n_head_kv, c.head_dim, c.n_rot, c.base, c.fscale, c.neox,
                                d_rows.data(), d_deltas.data(), kShifted, nullptr);
            const std::vector<uint8_t> got_pool = to_host(d_pool);

            // Rows not shifted, and every row's padding, are byte for byte unchanged.
            std::vector<bool> shifted(kPoolRows, false);
            for (const int32_t r : rows) shifted[size_t(r)] = true;
            size_t changed = 0;
            for (int64_t r = 0; r < kPoolRows; ++r) {
                const size_t begin = size_t(r) * row_bytes;
                const size_t from = shifted[size_t(r)] ? size_t(width) * elem_bytes : 0;
                for (size_t b = begin + from; b < begin + row_bytes; ++b)
                    if (got_pool[b] != pool[b]) ++changed;
            }
            EXPECT_EQ(changed, 0u) << what << ": bytes outside the shifted rows' heads changed";

            std::vector<float> got(want.size());
            size_t bit_diffs = 0;
            for (int64_t i = 0; i < kShifted; ++i) {
                const uint8_t* src = got_pool.data() + size_t(rows[size_t(i)]) * row_bytes;
                for (int64_t j = 0; j < width; ++j) {
                    float& g = got[size_t(i * width + j)];
                    if (f16) {
                        uint16_t h;
                        std::memcpy(&h, src + size_t(j) * 2, 2);
                        g = fp16_to_fp32(h);
                    } else {
                        std::memcpy(&g, src + size_t(j) * 4, 4);
                    }
                    if (g != want[size_t(i * width + j)]) ++bit_diffs;
                }
            }
            expect_close(got, want, kRopeTol, width, what, f16 ? 1.0 / 1024.0 : 0.0);
            if (f16) {
                EXPECT_LE(bit_diffs * 100, got.size())
                    << what << ": " << bit_diffs << " of " << got.size()
                    << " fp16 values differ from the CPU's rounding (more than 1%: a rounding "
                       "mode bug?)";
            }
        }
    }
}

// --- elementwise ---

TEST_F(CudaOpsTest, AddAndScaleMatchCpu) {
    cpu::CpuBackend be(1);
    std::mt19937 rng(5);
    for (const int64_t rows : kRows) {
        for (const int64_t width : kWidths) {
            const std::string shape = shape_str(rows, width);
            const auto n = size_t(rows * width);
            std::vector<float> x = random_floats(n, -10.0f, 10.0f, rng);
            std::vector<float> y = random_floats(n, -10.0f, 10.0f, rng);
            DeviceBuffer<float> d_x = to_device(x);
            DeviceBuffer<float> d_y = to_device(y);

            cuda::add(d_x.data(), d_y.data(), int64_t(n), nullptr);
            be.add(Act{x.data(), rows, width}, Act{y.data(), rows, width});
            expect_close(to_host(d_x), x, kExactTol, width, "add " + shape);

            for (const float s : {0.125f, 1.7f, -3.3f}) {
                cuda::scale(d_x.data(), s, int64_t(n), nullptr);
                be.scale(Act{x.data(), rows, width}, s);
                expect_close(to_host(d_x), x, kExactTol, width,
                             "scale " + shape + " by " + std::to_string(s));
            }
        }
    }
}

TEST_F(CudaOpsTest, AddBiasMatchesCpu) {
    cpu::CpuBackend be(1);
    std::mt19937 rng(6);
    for (const int64_t rows : kRows) {
        for (const int64_t width : kWidths) {
            for (const GgmlType type : kWeightTypes) {
                const std::string what =
                    "add_bias " + shape_str(rows, width) + " " + std::string(type_name(type));
                std::vector<float> y = random_floats(size_t(rows * width), -5.0f, 5.0f, rng);
                TypedRow b = typed_row(random_floats(size_t(width), -1.0f, 1.0f, rng), type);
                DeviceBuffer<float> d_y = to_device(y);
                DeviceBuffer<uint8_t> d_b = to_device(b.bytes);
                cuda::add_bias(d_y.data(), rows, width, d_b.data(), type, nullptr);
                be.add_bias(Act{y.data(), rows, width}, f32_weight(b.values, "bias"));
                expect_close(to_host(d_y), y, kExactTol, width, what);
            }
        }
    }
}

TEST_F(CudaOpsTest, GatedActivationsMatchCpu) {
    cpu::CpuBackend be(1);
    std::mt19937 rng(8);
    for (const int64_t rows : kRows) {
        for (const int64_t width : kWidths) {
            const std::string shape = shape_str(rows, width);
            const auto n = size_t(rows * width);
            const std::vector<float> gate = random_floats(n, -8.0f, 8.0f, rng);
            std::vector<float> up = random_floats(n, -3.0f, 3.0f, rng);
            DeviceBuffer<float> d_up = to_device(up);
            {
                std::vector<float> g = gate;
                DeviceBuffer<float> d_g = to_device(g);
                cuda::swiglu(d_g.data(), d_up.data(), int64_t(n), nullptr);
                be.swiglu(Act{g.data(), rows, width}, Act{up.data(), rows, width});
                expect_close(to_host(d_g), g, kActivationTol, width, "swiglu " + shape);
            }
            {
                std::vector<float> g = gate;
                DeviceBuffer<float> d_g = to_device(g);
                cuda::geglu_tanh(d_g.data(), d_up.data(), int64_t(n), nullptr);
                be.geglu_tanh(Act{g.data(), rows, width}, Act{up.data(), rows, width});
                expect_close(to_host(d_g), g, kActivationTol, width, "geglu_tanh " + shape);
            }
            {  // gpt-oss's clamps: gate in [-8, 8] and up in [-3, 3] cross limit 2 both ways
                std::vector<float> g = gate;
                DeviceBuffer<float> d_g = to_device(g);
                cuda::swiglu_oai(d_g.data(), d_up.data(), 1.702f, 2.0f, int64_t(n), nullptr);
                be.swiglu_oai(Act{g.data(), rows, width}, Act{up.data(), rows, width}, 1.702f,
                              2.0f);
                expect_close(to_host(d_g), g, kActivationTol, width, "swiglu_oai " + shape);
            }
        }
    }
}

TEST_F(CudaOpsTest, SoftcapMatchesCpu) {
    cpu::CpuBackend be(1);
    std::mt19937 rng(9);
    for (const int64_t rows : kRows) {
        for (const int64_t width : kWidths) {
            for (const float cap : {30.0f, 50.0f}) {
                const std::string what =
                    "softcap " + shape_str(rows, width) + " cap " + std::to_string(cap);
                std::vector<float> x =
                    random_floats(size_t(rows * width), -4.0f * cap, 4.0f * cap, rng);
                DeviceBuffer<float> d_x = to_device(x);
                cuda::softcap(d_x.data(), cap, int64_t(x.size()), nullptr);
                be.softcap(Act{x.data(), rows, width}, cap);
                expect_close(to_host(d_x), x, kActivationTol, width, what);
            }
        }
    }
}

TEST_F(CudaOpsTest, GatherRowsMatchesCpu) {
    cpu::CpuBackend be(1);
    std::mt19937 rng(10);
    constexpr int64_t kSrcRows = 300;
    for (const int64_t n : kRows) {
        for (const int64_t width : kWidths) {
            const std::string what = "gather_rows " + shape_str(n, width);
            std::vector<float> x = random_floats(size_t(kSrcRows * width), -5.0f, 5.0f, rng);
            std::uniform_int_distribution<int32_t> row(0, kSrcRows - 1);
            std::vector<int32_t> rows(static_cast<size_t>(n));
            for (auto& r : rows) r = row(rng);
            rows.front() = kSrcRows - 1;  // the last row, and a repeat
            if (n > 1) rows.back() = rows.front();

            DeviceBuffer<float> d_x = to_device(x);
            DeviceBuffer<int32_t> d_rows = to_device(rows);
            DeviceBuffer<float> d_y(size_t(n * width));
            cuda::gather_rows(d_x.data(), width, d_rows.data(), n, d_y.data(), nullptr);
            std::vector<float> want(size_t(n * width));
            be.gather_rows(Act{x.data(), kSrcRows, width}, rows, Act{want.data(), n, width});
            expect_close(to_host(d_y), want, kExactTol, width, what);
        }
    }
}

// MLA's per-head column blocks (arch_deepseek2.cpp): a strided split, a broadcast (x stride 0)
// and a block written into the middle of wider rows. Copies: exact.
TEST_F(CudaOpsTest, CopyBlocksMatchesCpu) {
    cpu::CpuBackend be(1);
    std::mt19937 rng(12);
    const BlockCopy cases[] = {{16, 4, 0, 24, 8, 24}, {8, 4, 32, 0, 0, 40}, {32, 1, 0, 0, 8, 0}};
    for (const int64_t n : kRows) {
        for (const BlockCopy& c : cases) {
            const int64_t xw = c.x_offset + (c.n_blocks - 1) * c.x_stride + c.width + 3;
            const int64_t yw = c.y_offset + (c.n_blocks - 1) * c.y_stride + c.width + 5;
            const std::string what =
                "copy_blocks " + shape_str(n, xw) + " -> " + std::to_string(yw);
            const std::vector<float> x = random_floats(size_t(n * xw), -5.0f, 5.0f, rng);
            std::vector<float> want = random_floats(size_t(n * yw), -5.0f, 5.0f, rng);
            DeviceBuffer<float> d_x = to_device(x);
            DeviceBuffer<float> d_y = to_device(want);
            cuda::copy_blocks(d_x.data(), xw, d_y.data(), yw, n, c.width, c.n_blocks, c.x_offset,
                              c.x_stride, c.y_offset, c.y_stride, nullptr);
            be.copy_blocks(Act{const_cast<float*>(x.data()), n, xw}, Act{want.data(), n, yw}, c);
            expect_close(to_host(d_y), want, kExactTol, yw, what);
        }
    }
}

// More elements than the capped grid has threads: the grid-stride loops must cover the rest.
TEST_F(CudaOpsTest, LargeElementwiseCoversEveryElement) {
    cpu::CpuBackend be(1);
    std::mt19937 rng(11);
    const int64_t rows = 2049, width = 1024 + 3;  // 2.1M elements
    const auto n = size_t(rows * width);
    std::vector<float> x = random_floats(n, -4.0f, 4.0f, rng);
    std::vector<float> y = random_floats(n, -4.0f, 4.0f, rng);
    DeviceBuffer<float> d_x = to_device(x);
    DeviceBuffer<float> d_y = to_device(y);
    cuda::add(d_x.data(), d_y.data(), int64_t(n), nullptr);
    be.add(Act{x.data(), rows, width}, Act{y.data(), rows, width});
    expect_close(to_host(d_x), x, kExactTol, width, "add 2049x1027");
    cuda::swiglu(d_x.data(), d_y.data(), int64_t(n), nullptr);
    be.swiglu(Act{x.data(), rows, width}, Act{y.data(), rows, width});
    expect_close(to_host(d_x), x, kActivationTol, width, "swiglu 2049x1027");

    std::vector<int32_t> idx(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) idx[size_t(i)] = int32_t(rows - 1 - i);
    DeviceBuffer<int32_t> d_idx = to_device(idx);
    DeviceBuffer<float> d_g(n);
    cuda::gather_rows(d_x.data(), width, d_idx.data(), rows, d_g.data(), nullptr);
    std::vector<float> want(n);
    be.gather_rows(Act{x.data(), rows, width}, idx, Act{want.data(), rows, width});
    expect_close(to_host(d_g), want, kExactTol, width, "gather_rows reversed 2049x1027");
}

// --- argument checks: they happen before any CUDA call, so these run without a GPU ---

// The Error's message must contain every one of `parts`.
template <typename Fn>
void expect_error_naming(Fn&& fn, std::initializer_list<const char*> parts) {
    try {
        fn();
        ADD_FAILURE() << "no Error thrown";
    } catch (const Error& e) {
        const std::string msg = e.what();
        for (const char* part : parts)
            EXPECT_NE(msg.find(part), std::string::npos)
                << "message \"" << msg << "\" does not name " << part;
    }
}

TEST(CudaOpsArgsTest, RejectsInconsistentShapes) {
    expect_error_naming(
        [] { cuda::rms_norm(nullptr, 2, 640, nullptr, GgmlType::F32, 100, 1e-6f, nullptr, {}); },
        {"640", "100"});
    EXPECT_THROW(cuda::rms_norm(nullptr, 2, 640, nullptr, GgmlType::F32, 0, 1e-6f, nullptr, {}),
                 Error);
    EXPECT_THROW(cuda::rms_norm(nullptr, 2, 640, nullptr, GgmlType::Q8_0, 64, 1e-6f, nullptr, {}),
                 UnsupportedError);
    expect_error_naming([] { cuda::rope(nullptr, 1, 8, 64, 63, 1e4f, 1.0f, false, nullptr, {}); },
                        {"63"});
    expect_error_naming([] { cuda::rope(nullptr, 1, 8, 64, 128, 1e4f, 1.0f, true, nullptr, {}); },
                        {"128", "64"});
    EXPECT_THROW(cuda::rope(nullptr, 1, 8, 64, -2, 1e4f, 1.0f, true, nullptr, {}), Error);
    EXPECT_THROW(cuda::rope(nullptr, 1, 0, 64, 64, 1e4f, 1.0f, true, nullptr, {}), Error);

    KvLayerDev layer;
    layer.elem = KvElem::F16;
    layer.k_row_bytes = 4 * 64 * 2 - 2;  // one element short
    expect_error_naming(
        [&] { cuda::rope_shift_kv(layer, 4, 64, 64, 1e4f, 1.0f, false, nullptr, nullptr, 1, {}); },
        {"510", "64"});
    layer.k_row_bytes = 4 * 64 * 2;
    EXPECT_THROW(cuda::rope_shift_kv(layer, 4, 64, 65, 1e4f, 1.0f, false, nullptr, nullptr, 1, {}),
                 Error);
    EXPECT_THROW(cuda::add_bias(nullptr, 1, 8, nullptr, GgmlType::Q4_0, {}), UnsupportedError);
    EXPECT_THROW(cuda::add(nullptr, nullptr, -1, {}), Error);
    EXPECT_THROW(cuda::softcap(nullptr, 0.0f, 8, {}), Error);
    EXPECT_THROW(cuda::gather_rows(nullptr, -1, nullptr, 1, nullptr, {}), Error);
}

TEST(CudaOpsArgsTest, EmptyInputsAreNoOps) {
    EXPECT_NO_THROW(
        cuda::rms_norm(nullptr, 0, 640, nullptr, GgmlType::F16, 64, 1e-6f, nullptr, {}));
    EXPECT_NO_THROW(cuda::rope(nullptr, 0, 8, 64, 64, 1e4f, 1.0f, false, nullptr, {}));
    EXPECT_NO_THROW(cuda::rope(nullptr, 3, 8, 64, 0, 1e4f, 1.0f, false, nullptr, {}));
    KvLayerDev layer;
    layer.elem = KvElem::F32;
    layer.k_row_bytes = 4 * 64 * 4;
    EXPECT_NO_THROW(
        cuda::rope_shift_kv(layer, 4, 64, 64, 1e4f, 1.0f, true, nullptr, nullptr, 0, {}));
    EXPECT_NO_THROW(cuda::add(nullptr, nullptr, 0, {}));
    EXPECT_NO_THROW(cuda::scale(nullptr, 2.0f, 0, {}));
    EXPECT_NO_THROW(cuda::add_bias(nullptr, 0, 640, nullptr, GgmlType::BF16, {}));
    EXPECT_NO_THROW(cuda::swiglu(nullptr, nullptr, 0, {}));
    EXPECT_NO_THROW(cuda::geglu_tanh(nullptr, nullptr, 0, {}));
    EXPECT_NO_THROW(cuda::swiglu_oai(nullptr, nullptr, 1.702f, 7.0f, 0, {}));
    EXPECT_NO_THROW(cuda::apply_sinks(nullptr, nullptr, nullptr, 0, 8, 64, {}));
    EXPECT_NO_THROW(cuda::softcap(nullptr, 30.0f, 0, {}));
    EXPECT_NO_THROW(cuda::gather_rows(nullptr, 640, nullptr, 0, nullptr, {}));
}

}  // namespace
}  // namespace fluoro::cuda
