// The rotation angles of RoPE, one definition for every backend: the CPU backend calls it from
// host code and the CUDA kernels from device code (it compiles as __host__ __device__ under
// nvcc), so both rotate by the same angles computed in the same order of f32 operations.
//
// For rotated pair i (i < n_rot / 2) of a token at position pos:
//   theta_i   = pos * base^(-2i/n_rot)         stepped in f32: theta_{i+1} = theta_i * theta_scale
//   extrap_i  = theta_i / factor_i             llama3's per-pair frequency divisors (rope_freqs)
//   interp_i  = freq_scale * extrap_i          linear scaling (freq_scale = 1 / scaling factor)
//   angle_i   = interp_i                       without YaRN; with YaRN (ext_factor != 0) a blend
//               interp_i * (1 - m_i) + extrap_i * m_i, m_i = ext_factor * ramp(i): the fast
//               (high-frequency) pairs keep their unscaled angle, the slow ones are interpolated
//   cos, sin  = cos(angle_i) * mscale, sin(angle_i) * mscale
// with mscale = attn_factor, times (1 + 0.1 ln(1 / freq_scale)) under YaRN (its attention
// temperature folded into q and k). Without scaling every extra step is an exact identity
// (x / 1, 1 * x, c * 1), so the default models' rotations are unchanged bit for bit.
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/tensor_ref.h"

#if defined(__CUDACC__)
#define FLUORO_ROPE_HD __host__ __device__
#else
#define FLUORO_ROPE_HD
#endif

namespace fluoro {

enum class RopeMode { Norm, Neox };  // adjacent pairs (llama) / halves (gpt-neox, qwen2, gemma)

struct RopeParams {
    int64_t n_rot = 0;  // rotated dims per head (the rest pass through)
    double freq_base = 10000.0;
    double freq_scale = 1.0;  // angles are multiplied by this (linear scaling, YaRN)
    RopeMode mode = RopeMode::Norm;
    // llama3 scaling: n_rot / 2 F32 divisors of the angles, resident in the backend (the
    // rope_freqs.weight tensor, owned by the architecture); nullptr = all 1.
    const Weight* freq_factors = nullptr;
    // YaRN (rope.scaling.type = yarn): ext_factor 0 = off.
    float ext_factor = 0.0f;
    float attn_factor = 1.0f;  // magnitude of the rotation (rope.scaling.attn_factor)
    float beta_fast = 32.0f;   // pairs turning more than beta_fast times over n_ctx_orig keep
    float beta_slow = 1.0f;    // their angle; fewer than beta_slow: fully interpolated
    int64_t n_ctx_orig = 0;    // rope.scaling.original_context_length
};

// Per-call constants of the angle formula, computed once on the host.
struct RopeCoeffs {
    float theta_scale = 1.0f;  // base^(-2/n_rot)
    float freq_scale = 1.0f;
    float ext_factor = 0.0f;
    float mscale = 1.0f;                   // final magnitude, YaRN's correction included
    float corr_lo = 0.0f, corr_hi = 0.0f;  // YaRN ramp: pairs below lo keep, above hi interpolate
};

// magnitude = false gives a pure rotation (mscale 1): re-rotating cached keys, which already
// carry the magnitude, must only turn them.
inline RopeCoeffs rope_coeffs(const RopeParams& p, bool magnitude = true) {
    RopeCoeffs k;
    const float n_rot = static_cast<float>(p.n_rot);
    k.theta_scale = std::pow(static_cast<float>(p.freq_base), -2.0f / n_rot);
    k.freq_scale = static_cast<float>(p.freq_scale);
    k.ext_factor = p.ext_factor;
    if (magnitude) {
        k.mscale = p.attn_factor;
        if (p.ext_factor != 0.0f) k.mscale *= 1.0f + 0.1f * std::log(1.0f / k.freq_scale);
    }
    if (p.ext_factor != 0.0f) {
        // Pair i turns n_ctx_orig * base^(-2i/n_rot) / (2 pi) times over the original context;
        // the pair that turns exactly `turns` times is i = n_rot * ln(n_ctx_orig / (2 pi turns))
        // / (2 ln base). Pairs up to the beta_fast one keep their angle, pairs from the
        // beta_slow one on are interpolated, linearly in between (rounded outward to pairs).
        const float two_ln_base = 2.0f * std::log(static_cast<float>(p.freq_base));
        const auto pair_turning = [&](float turns) {
            const float ctx = static_cast<float>(p.n_ctx_orig);
            return n_rot * std::log(ctx / (turns * 2.0f * 3.14159265358979323846f)) / two_ln_base;
        };
        const float lo = std::floor(pair_turning(p.beta_fast));
        const float hi = std::ceil(pair_turning(p.beta_slow));
        k.corr_lo = lo > 0.0f ? lo : 0.0f;
        k.corr_hi = hi < n_rot - 1.0f ? hi : n_rot - 1.0f;
    }
    return k;
}

// cos and sin of pair i's angle, theta = the stepped pos * theta_scale^i, ff = its factor.
FLUORO_ROPE_HD inline void rope_cos_sin(float theta, float ff, int64_t i, const RopeCoeffs& k,
                                        float* c, float* s) {
    const float extrap = theta / ff;
    float angle = k.freq_scale * extrap;
    if (k.ext_factor != 0.0f) {
        const float span = k.corr_hi - k.corr_lo > 0.001f ? k.corr_hi - k.corr_lo : 0.001f;
        float y = (static_cast<float>(i) - k.corr_lo) / span;
        y = y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y);
        const float mix = (1.0f - y) * k.ext_factor;
#if defined(__CUDA_ARCH__)
        angle = __fadd_rn(__fmul_rn(angle, 1.0f - mix), __fmul_rn(extrap, mix));  // no FMA
#else
        angle = angle * (1.0f - mix) + extrap * mix;
#endif
    }
    *c = cosf(angle) * k.mscale;
    *s = sinf(angle) * k.mscale;
}

}  // namespace fluoro
