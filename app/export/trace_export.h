// A run as Chrome Trace Event JSON (the format chrome://tracing and ui.perfetto.dev open).
//   pid 1 = the run; tracks (tid): 1 "steps" (one X slice per step, and inside it one X slice per
//   operation category, laid end to end: their lengths are the step's time per category, their
//   order is not the real interleaving), 2 "tokens" (an instant per token), 3 "prompt cache"
//   (an instant per prefix-cache event: hit or miss), 4 "speculative" (an instant per spec step:
//   accepted or rejected), 5 "KV policy" (an instant per KV eviction with its counts: evicted,
//   kept, kept as sinks / recent / heavy hitters). Counter tracks: tok/s (per decode step), KV
//   bytes, cache hit rate, acceptance rate, KV tokens kept. M events name the process and the
//   tracks. Times are microseconds from the run's start.
#pragma once

#include <nlohmann/json.hpp>

#include "store/records.h"

namespace fluoro::app {

nlohmann::json run_to_chrome_trace(const RunRecord& run);

}  // namespace fluoro::app
