// "Prefix caching: time to first token is linear in the part of the prompt not cached, and one
// changed token invalidates everything after it" (docs/CLAIMS.md 8), measured with the engine's
// own reuse: a Sequence's prefill keeps the longest cached prefix of the new prompt and computes
// the rest (decode/sequence.h), as a chat's next turn or a prefix-cache hit does.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

namespace fluoro {
class Model;
}

namespace fluoro::app {

// prompt: the tokens of one prompt (its whole length is the prompt measured). shares: cached
// fractions to time, e.g. 0, 0.25, 0.5, 0.75, 0.9.
nlohmann::json claim_prefix_cache(Model& model, std::span<const int32_t> prompt,
                                  const std::vector<double>& shares, int reps = 3);

// R² of the least-squares line y = a + b x (0 for fewer than three points).
double linear_r2(const std::vector<double>& x, const std::vector<double>& y,
                 double* slope = nullptr, double* intercept = nullptr);

}  // namespace fluoro::app
