// The per-operation timeline of one step, recorded at telemetry level Trace: every backend call
// the forward pass made, in order, with its layer, what it must read and compute, and the host
// thread pool's busy spans beneath (ProfilingBackend records both; StepEvent::trace carries them).
// Times are nanoseconds since the run started, like every other event's.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "backend/worker_trace.h"
#include "telemetry/time_category.h"

namespace fluoro {

struct OpSpan {
    int64_t start_ns = 0, end_ns = 0;
    int32_t name = 0;    // index into StepTrace::names
    int32_t layer = -1;  // the transformer block; -1 outside them (embedding, output norm, LM head)
    int32_t rows = 0;    // activation rows (tokens) the call worked on
    TimeCategory category = TimeCategory::Other;
    // What the call must at least read from memory (a matmul's whole weight, attention's KV rows
    // up to the furthest position attended) and its floating-point operations (2 per
    // multiply-add), counted as ProfilingBackend::Traffic counts them; 0 for the other ops.
    double bytes = 0, flops = 0;
    // A matmul's weight type (GgmlType's raw id: the quant type), -1 for ops without weights; the
    // shape: a matmul's (inputs, outputs: the fused ones' outputs summed), attention's (keys
    // attended by the furthest query, query heads), other ops' (row width, 0).
    int32_t weight_type = -1;
    std::array<int32_t, 2> shape{0, 0};
};

// How the op names are formed: a matmul is named after its weight without "blk.N." and ".weight"
// ("attn_q", "ffn_down"), the LM head "lm_head(output)" ("lm_head(token_embd)" when tied); a fused
// one (matmul_many) joins its weights with '+' ("attn_q+attn_k+attn_v"); a norm is
// "rms_norm(attn_norm)", a residual add fused with it "add_rms_norm(ffn_norm)", an embedding lookup
// "get_rows(token_embd)"; the other calls go by the backend method's name ("attention", "rope",
// "rope_qk", "swiglu", "add", "read", ...). An op without a weight belongs to the layer of the
// weight or attention call before it in the step.
struct StepTrace {
    std::vector<std::string> names;
    std::vector<OpSpan> ops;          // in the order they ran
    std::vector<WorkerBusy> workers;  // the host pool's spans (times converted to run time)
    int32_t threads = 1;              // the backend's host threads
    int64_t dropped = 0;              // worker spans lost to a full ring (WorkerTrace)

    std::string_view name_of(const OpSpan& s) const {
        return s.name >= 0 && size_t(s.name) < names.size()
                   ? std::string_view(names[size_t(s.name)])
                   : std::string_view("?");
    }
};

// Why a stored or imported trace cannot be right, "" when it can: a name index outside names, a
// category outside TimeCategory, a weight type ggml does not define, a span ending before it
// starts, a worker outside [0, threads), threads < 1, a negative drop count.
std::string step_trace_error(const StepTrace& t);

// The op name's layer and short form of a GGUF tensor name: "blk.12.attn_q.weight" -> (12,
// "attn_q"); "output.weight" -> (-1, "output"); one matrix of a stacked tensor is its tensor's
// op ("blk.3.ffn_up_exps.weight[expert 5]" -> (3, "ffn_up_exps")); a name of another shape is
// kept whole.
struct TensorOpName {
    int32_t layer = -1;
    std::string_view op;
};
TensorOpName tensor_op_name(std::string_view tensor);

}  // namespace fluoro
