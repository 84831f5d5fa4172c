// The one-line summary printed after each answer: TTFT, prompt tok/s, decode tok/s — the figures
// llama.cpp and LM Studio users look for.
#pragma once

#include <string>

#include "decode/generate.h"

namespace fluoro::app {

std::string stats_line(const GenerateResult& r);

}  // namespace fluoro::app
