// This machine's limits, the denominators of a roofline: read bandwidth and the two compute peaks
// (float32 FMA, int8 dot products), as fluoro_membw measures them with a given thread count
// (bench/membw.cpp); and an op's floor, the least time its bytes and operations can take.
// `fluoro profile` and the window's roofline plot use them.
#pragma once

#include <optional>

#include "telemetry/op_costs.h"

namespace fluoro::app {

struct MachineLimits {
    double read_gbs = 0;    // GB/s
    double fma_gflops = 0;  // float32 FMA, GFLOP/s
    double int8_gops = 0;   // u8 x s8 dot products, GOP/s
};

// Runs fluoro_membw (beside the running executable, or in ../bench/ of a build tree) with
// `threads` threads and `runs` repetitions; nullopt when it is not found or fails. Takes a few
// seconds of every core.
std::optional<MachineLimits> measure_machine_limits(int threads, int runs = 5);

// The peak an op is held to: int8 for a matmul on a quantized weight, FMA otherwise.
double compute_peak(const MachineLimits& m, int32_t weight_type);

// The least time an op can take: its bytes at the bandwidth or its operations at its peak,
// whichever is longer; 0 when neither limit is known.
double floor_seconds(const MachineLimits& m, double bytes, double flops, int32_t weight_type);

}  // namespace fluoro::app
