// RoPE scaling on the CPU backend (backend/rope.h): llama3's per-pair frequency divisors, linear
// scaling and YaRN, each checked against a float64 formula written here from the published
// definitions; the unscaled rotation unchanged bit for bit; and the re-rotation of cached keys
// (kv_rope_shift, used by Model::compact_kv) equal to rotating at the shifted position — a pure
// rotation, so YaRN's magnitude is not applied twice.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kv_rows.h"
#include "kv/contiguous_kv.h"

namespace fluoro {
namespace {

using cpu::CpuBackend;
using cpu::kv_load;
using cpu::kv_store;

constexpr int64_t kHeads = 3, kHd = 32, kWidth = kHeads * kHd;

struct Case {
    const char* name;
    double freq_scale;
    float ext_factor;
    float attn_factor;
    bool factors;
};
constexpr Case kCases[] = {{"plain", 1.0, 0.0f, 1.0f, false},
                           {"llama3", 1.0, 0.0f, 1.0f, true},
                           {"linear", 0.25, 0.0f, 1.0f, false},
                           {"yarn", 0.25, 1.0f, 1.0f, false},
                           {"yarn_attn_factor", 0.125, 1.0f, 0.9f, false}};

std::vector<float> llama3_like_factors() {
    std::vector<float> f(size_t(kHd / 2));
    for (size_t i = 0; i < f.size(); ++i) f[i] = i < 4 ? 1.0f : (i < 8 ? 1.0f + float(i) : 8.0f);
    return f;
}

RopeParams params(const Case& c, RopeMode mode, const Weight* factors) {
    RopeParams p;
    p.n_rot = kHd;
    p.freq_base = 10000.0;
    p.freq_scale = c.freq_scale;
    p.mode = mode;
    p.freq_factors = c.factors ? factors : nullptr;
    p.ext_factor = c.ext_factor;
    p.attn_factor = c.attn_factor;
    p.n_ctx_orig = 256;
    return p;
}

// The float64 angle of pair i at position pos and the magnitude, from the definitions: llama3
// divides the frequency by factor i; linear scaling multiplies it by freq_scale; YaRN blends the
// scaled and unscaled frequency by a ramp over the pairs between the one turning beta_fast times
// over n_ctx_orig positions (kept) and the one turning beta_slow times (scaled), and multiplies
// q and k by attn_factor * (1 + 0.1 ln(1 / freq_scale)).
void reference_angle(const RopeParams& p, const std::vector<float>& f, int64_t pos, int64_t i,
                     double* angle, double* mag) {
    const double n = double(p.n_rot);
    double freq = std::pow(p.freq_base, -2.0 * double(i) / n);
    if (p.freq_factors) freq /= f[size_t(i)];
    double scaled = freq * p.freq_scale;
    *mag = p.attn_factor;
    if (p.ext_factor != 0.0f) {
        const auto pair_turning = [&](double turns) {
            return n * std::log(double(p.n_ctx_orig) / (turns * 2 * M_PI)) /
                   (2 * std::log(p.freq_base));
        };
        const double lo = std::max(0.0, std::floor(pair_turning(p.beta_fast)));
        const double hi = std::min(n - 1, std::ceil(pair_turning(p.beta_slow)));
        const double y = std::clamp((double(i) - lo) / std::max(0.001, hi - lo), 0.0, 1.0);
        const double keep = (1 - y) * p.ext_factor;
        scaled = scaled * (1 - keep) + freq * keep;
        *mag *= 1 + 0.1 * std::log(1 / p.freq_scale);
    }
    *angle = double(pos) * scaled;
}

std::vector<float> random_rows(int64_t rows, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> v(size_t(rows * kWidth));
    for (float& x : v) x = u(rng);
    return v;
}

TEST(RopeScaling, MatchesTheFloat64Definition) {
    CpuBackend be(2);
    std::vector<float> f = llama3_like_factors();
    Weight fw;
    fw.name = "rope_freqs.weight";
    fw.ne[0] = int64_t(f.size());
    fw.data = f.data();
    const std::vector<int32_t> pos = {0, 1, 7, 255, 256, 1000, 4095};
    const int64_t rows = int64_t(pos.size());
    for (const Case& c : kCases) {
        for (const RopeMode mode : {RopeMode::Norm, RopeMode::Neox}) {
            SCOPED_TRACE(std::string(c.name) + (mode == RopeMode::Neox ? " neox" : " norm"));
            const RopeParams p = params(c, mode, &fw);
            const std::vector<float> in = random_rows(rows, 3);
            std::vector<float> x = in;
            be.rope(Act{x.data(), rows, kWidth}, kHeads, kHd, p, pos);
            double worst = 0;
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t h = 0; h < kHeads; ++h)
                    for (int64_t i = 0; i < kHd / 2; ++i) {
                        const int64_t a = mode == RopeMode::Neox ? i : 2 * i;
                        const int64_t b = mode == RopeMode::Neox ? i + kHd / 2 : 2 * i + 1;
                        const size_t o = size_t(r * kWidth + h * kHd);
                        double angle, mag;
                        reference_angle(p, f, pos[size_t(r)], i, &angle, &mag);
                        const double x0 = in[o + size_t(a)], x1 = in[o + size_t(b)];
                        const double ya = mag * (x0 * std::cos(angle) - x1 * std::sin(angle));
                        const double yb = mag * (x0 * std::sin(angle) + x1 * std::cos(angle));
                        worst = std::max({worst, std::abs(ya - x[o + size_t(a)]),
                                          std::abs(yb - x[o + size_t(b)])});
                    }
            // theta is stepped in f32 (as ggml does): its relative error grows ~1 ulp per pair,
            // so at position 4095 the angle is off by up to ~16 * 6e-8 * 4095 rad = 4e-3.
            EXPECT_LT(worst, 5e-3);
        }
    }
}

// Without scaling the rotation is the one this engine always computed (theta_0 = pos *
// freq_scale, stepped by theta_scale, cos/sin of it): the default models' logits cannot move.
TEST(RopeScaling, UnscaledRotationIsUnchangedBitForBit) {
    CpuBackend be(1);
    const std::vector<int32_t> pos = {0, 3, 511, 8191, 32767};
    const int64_t rows = int64_t(pos.size());
    for (const RopeMode mode : {RopeMode::Norm, RopeMode::Neox}) {
        RopeParams p;
        p.n_rot = kHd;
        p.freq_base = 100000.0;
        p.mode = mode;
        std::vector<float> x = random_rows(rows, 8), old = x;
        be.rope(Act{x.data(), rows, kWidth}, kHeads, kHd, p, pos);
        const float theta_scale = std::pow(float(p.freq_base), -2.0f / float(p.n_rot));
        for (int64_t r = 0; r < rows; ++r) {
            float theta = float(pos[size_t(r)]) * float(p.freq_scale);
            for (int64_t i = 0; i < kHd / 2; ++i) {
                const float c = std::cos(theta), s = std::sin(theta);
                for (int64_t h = 0; h < kHeads; ++h) {
                    float* v = old.data() + r * kWidth + h * kHd;
                    const int64_t a = mode == RopeMode::Neox ? i : 2 * i;
                    const int64_t b = mode == RopeMode::Neox ? i + kHd / 2 : 2 * i + 1;
                    const float x0 = v[a], x1 = v[b];
                    v[a] = x0 * c - x1 * s;
                    v[b] = x0 * s + x1 * c;
                }
                theta *= theta_scale;
            }
        }
        EXPECT_EQ(x, old);
    }
}

// A key rotated at position a and then shifted by d equals the key rotated at a + d (to f32
// rounding of the composed angles), for every kind of scaling: the shift path applies the same
// angles, and YaRN's magnitude only once.
TEST(RopeScaling, KvShiftEqualsRotatingAtTheShiftedPosition) {
    std::vector<float> f = llama3_like_factors();
    Weight fw;
    fw.name = "rope_freqs.weight";
    fw.ne[0] = int64_t(f.size());
    fw.data = f.data();
    const int64_t n = 64;
    for (const Case& c : kCases) {
        for (const RopeMode mode : {RopeMode::Norm, RopeMode::Neox}) {
            SCOPED_TRACE(std::string(c.name) + (mode == RopeMode::Neox ? " neox" : " norm"));
            CpuBackend be(2);
            const RopeParams p = params(c, mode, &fw);
            KvShape shape;
            shape.n_layer = 1;
            shape.n_head_kv = {kHeads};
            shape.head_dim_k = shape.head_dim_v = kHd;
            shape.type = KvType::F32;
            shape.n_ctx = n;
            ContiguousKvCache kv(shape);
            const std::vector<float> keys = random_rows(n, 11);
            std::vector<int32_t> pos(static_cast<size_t>(n)), shifted(static_cast<size_t>(n)),
                deltas(static_cast<size_t>(n));
            for (int32_t i = 0; i < int32_t(n); ++i) {
                pos[size_t(i)] = 300 + 5 * i;
                deltas[size_t(i)] = -250 + 7 * (i % 5);
                shifted[size_t(i)] = pos[size_t(i)] + deltas[size_t(i)];
            }
            std::vector<float> rotated = keys, expected = keys;
            be.rope(Act{rotated.data(), n, kWidth}, kHeads, kHd, p, pos);
            be.rope(Act{expected.data(), n, kWidth}, kHeads, kHd, p, shifted);
            for (int64_t i = 0; i < n; ++i) kv.write_k(0, 0, i, rotated.data() + i * kWidth);
            kv.set_length(0, n);
            be.kv_rope_shift(kv, 0, 0, 0, deltas, p);
            double worst = 0;
            std::vector<float> row(static_cast<size_t>(kWidth));
            for (int64_t i = 0; i < n; ++i) {
                kv.read_k(0, 0, i, row.data());  // F32 rows: the floats themselves
                for (int64_t j = 0; j < kWidth; ++j)
                    worst = std::max(
                        worst, double(std::abs(row[size_t(j)] - expected[size_t(i * kWidth + j)])));
            }
            // Angles up to ~600 rad in f32 (ulp 6e-5, stepped over 16 pairs): 1e-3 is rounding;
            // a magnitude applied twice (YaRN: x1.14) or a wrong angle is off by > 0.1.
            EXPECT_LT(worst, 1e-3);
        }
    }
}

}  // namespace
}  // namespace fluoro
