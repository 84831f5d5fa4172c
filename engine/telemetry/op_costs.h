// A traced step's ops summed per name (every layer's QKV projection, attention, ...): what
// `fluoro profile`'s per-op table and the profiler dock's roofline plot show. Also which compute
// peak an op is held to: the quantized matmuls run on int8 dot products (activations quantized to
// 8 bits, weights expanded to 8 bits), everything else on float arithmetic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "telemetry/op_trace.h"

namespace fluoro {

struct OpCost {
    std::string name;
    TimeCategory category = TimeCategory::Other;
    int32_t weight_type = -1;  // the first call's (GgmlType raw id; -1 none)
    int64_t calls = 0, ns = 0;
    double bytes = 0, flops = 0;
};

// The trace's ops summed per name, in the order the names first ran.
std::vector<OpCost> op_costs(const StepTrace& t);

// Whether a matmul on this weight type runs the int8 dot kernels (a quantized type) rather than
// float arithmetic (F32, F16, BF16, or no weight).
bool uses_int8_dot(int32_t weight_type);

}  // namespace fluoro
