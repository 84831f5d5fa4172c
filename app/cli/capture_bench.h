// `fluoro bench MODEL --capture compare`: decode speed through the Engine with attention capture
// off and on, alternated run by run in one process (the noisy-machine way), after a long prompt
// (--capture-tokens, ~4k by default) so attention is a large part of each step. "On" captures
// the last query row of one head of the middle layer every step and the per-head sparsity of
// every layer — what the attention panel asks during a chat. Prints the medians and their ratio.
#pragma once

#include <string>

#include "cli/engine_flags.h"

namespace fluoro::cli {

struct CaptureBenchOptions {
    std::string model;
    int64_t prompt_tokens = 4096;
    int64_t n_gen = 64;
    int64_t repetitions = 5;
    bool json = false;
    EngineFlags engine;
};

void run_capture_bench(const CaptureBenchOptions& o);

}  // namespace fluoro::cli
