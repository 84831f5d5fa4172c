#include "sampling/sampling_params.h"

#include <cmath>
#include <sstream>
#include <string_view>

#include "core/error.h"

namespace fluoro {
namespace {

template <typename T>
[[noreturn]] void bad(std::string_view field, T value, std::string_view rule) {
    std::ostringstream s;
    s << "sampling setting " << field << " = " << value << " is invalid: " << rule;
    throw Error(s.str());
}

}  // namespace

void SamplingParams::validate() const {
    if (!std::isfinite(temperature) || temperature < 0.0f)
        bad("temperature", temperature, "must be a finite number >= 0 (0 = greedy)");
    if (top_k < 0) bad("top_k", top_k, "must be >= 0 (0 = off)");
    if (!(top_p > 0.0f && top_p <= 1.0f)) bad("top_p", top_p, "must be in (0, 1] (1 = off)");
    if (!(min_p >= 0.0f && min_p <= 1.0f)) bad("min_p", min_p, "must be in [0, 1] (0 = off)");
    if (!std::isfinite(repeat_penalty) || repeat_penalty <= 0.0f)
        bad("repeat_penalty", repeat_penalty, "must be a finite number > 0 (1 = off)");
    if (repeat_last_n < -1) bad("repeat_last_n", repeat_last_n, "must be >= -1 (-1 = all)");
    if (!std::isfinite(frequency_penalty))
        bad("frequency_penalty", frequency_penalty, "must be a finite number (0 = off)");
    if (!std::isfinite(presence_penalty))
        bad("presence_penalty", presence_penalty, "must be a finite number (0 = off)");
    if (n_probs < 0 || n_probs > kMaxTopProbs)
        bad("n_probs", n_probs, "must be in [0, " + std::to_string(kMaxTopProbs) + "]");
}

}  // namespace fluoro
