// The one-line summary printed after each answer: TTFT, prompt tok/s, decode tok/s — the figures
// llama.cpp and LM Studio users look for; the reasoning tokens (RunFinished::reasoning_tokens,
// counted in the decode tokens too) separately when the model reasoned.
#pragma once

#include <cstdint>
#include <string>

#include "decode/generate.h"

namespace fluoro::app {

std::string stats_line(const GenerateResult& r, int64_t reasoning_tokens = 0);

}  // namespace fluoro::app
