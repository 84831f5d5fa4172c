// gpt-oss's clamped SwiGLU on the CPU backend (Backend::swiglu_oai) against its definition in
// float64: g' = min(g, limit), u' = clamp(u, -limit, limit), out = g' sigmoid(alpha g') (u' + 1).
// Inputs on both sides of both clamps. The CPU evaluates it in float with std::exp, so each value
// is within a few ulps of the float64 one: 1e-6 relative (8 ulps) plus 1e-7 absolute near 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"

namespace fluoro {
namespace {

TEST(SwigluOai, ClampsGateAboveAndUpBothSides) {
    cpu::CpuBackend be(2);
    const float alpha = 1.702f, limit = 7.0f;
    std::vector<float> gate, up;
    for (const float g : {-20.0f, -7.5f, -1.0f, 0.0f, 0.5f, 6.99f, 7.0f, 7.01f, 30.0f})
        for (const float u : {-30.0f, -7.01f, -7.0f, -1.0f, 0.0f, 2.5f, 7.0f, 9.0f}) {
            gate.push_back(g);
            up.push_back(u);
        }
    const std::vector<float> g0 = gate;
    const int64_t rows = 8, width = int64_t(gate.size()) / rows;
    be.swiglu_oai(Act{gate.data(), rows, width}, Act{up.data(), rows, width}, alpha, limit);
    for (size_t i = 0; i < gate.size(); ++i) {
        const double x = std::min(double(g0[i]), double(limit));
        const double y = std::clamp(double(up[i]), -double(limit), double(limit));
        const double want = x / (1.0 + std::exp(-double(alpha) * x)) * (y + 1.0);
        EXPECT_NEAR(gate[i], want, 1e-6 * std::abs(want) + 1e-7)
            << "gate " << g0[i] << ", up " << up[i];
    }
    // Past the limits the output does not move: gate 30 equals gate 7, up 9 equals up 7.
    EXPECT_EQ(gate[8 * 8 + 6], gate[6 * 8 + 6]);
    EXPECT_EQ(gate[6 * 8 + 7], gate[6 * 8 + 6]);
}

TEST(SwigluOai, RefusesMismatchedShapes) {
    cpu::CpuBackend be(1);
    std::vector<float> g(8), u(6);
    EXPECT_THROW(be.swiglu_oai(Act{g.data(), 2, 4}, Act{u.data(), 2, 3}, 1.702f, 7.0f), Error);
}

}  // namespace
}  // namespace fluoro
