// The sampler's whole-vocabulary passes over a logit row (finiteness check, max, exp-and-sum),
// written so the compiler vectorizes them. They are the sampler's cost floor on a 262144-token
// vocabulary; everything else touches only the candidates that survive.
#pragma once

#include <cstddef>
#include <span>

namespace fluoro::sampling {

// Index of the first NaN or +inf value, or v.size() when there is none (-inf is allowed).
size_t find_nan_or_pos_inf(std::span<const float> v);

// Largest value (-inf for an empty or all -inf row). The row must hold no NaN.
float max_value(std::span<const float> v);

// out[i] = exp((logits[i] - max_logit) * scale) for every i, and returns the sum of out in
// double. Requires logits[i] <= max_logit and scale > 0. Relative error ~1e-7.
// On x86-64 Linux it runs the AVX-512 or AVX2 version when the CPU has one; those may use FMA,
// so the last bit of a weight can differ between CPUs (never the token drawn, in practice).
double exp_shifted_sum(std::span<const float> logits, float max_logit, float scale,
                       std::span<float> out);

}  // namespace fluoro::sampling
