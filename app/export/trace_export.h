// A run as Chrome Trace Event JSON (the format chrome://tracing and ui.perfetto.dev open).
//   pid 1 = the run; tracks (tid): 1 "steps" (one X slice per step; inside a step recorded at level
//   Trace its real timeline — "layer N" slices holding the op slices in the order they ran, each
//   with its layer, rows, category, bytes, GB/s, FLOPs and GFLOP/s as args, under an op the engine
//   thread's own "tasks" of the pool's region and its "wait" for the others, then "host" for the
//   step's time after its last op; inside any other step one X slice per operation category, laid
//   end to end: their lengths are the step's time per category, their order is not the real
//   interleaving), 10 + w "worker w" (worker w's busy spans, traced steps only), 6 "request" (one
//   slice for the whole run, a flow arrow from it to each step), 2 "tokens" (an instant per token),
//   3 "prompt cache" (an instant per prefix-cache event: hit or miss), 4 "speculative" (an instant
//   per spec step: accepted or rejected), 5 "KV policy" (an instant per KV eviction with its
//   counts: evicted, kept, kept as sinks / recent / heavy hitters). Counter tracks: tok/s (per
//   decode step), achieved GB/s (a traced step's op bytes over its wall time), KV bytes, cache hit
//   rate, acceptance rate, KV tokens kept. M events name the process and the tracks. Times are
//   microseconds from the run's start.
#pragma once

#include <nlohmann/json.hpp>

#include "store/records.h"

namespace fluoro::app {

nlohmann::json run_to_chrome_trace(const RunRecord& run);

}  // namespace fluoro::app
