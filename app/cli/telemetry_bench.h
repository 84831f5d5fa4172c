// `fluoro bench MODEL --telemetry off|summary|full|compare`: decode speed through the Engine
// (its thread, the event stream, a consumer draining it) at a telemetry level. `compare`
// alternates off and full run by run in one process — the noisy-machine way — and prints both
// means and their ratio: the telemetry overhead.
#pragma once

#include <string>

#include "cli/engine_flags.h"

namespace fluoro::cli {

struct TelemetryBenchOptions {
    std::string model, level;
    int64_t n_gen = 128;
    int64_t repetitions = 5;
    bool json = false;
    EngineFlags engine;
};

void run_telemetry_bench(const TelemetryBenchOptions& o);

}  // namespace fluoro::cli
