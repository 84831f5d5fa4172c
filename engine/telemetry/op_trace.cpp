#include "telemetry/op_trace.h"

#include <charconv>

#include "tensor/ggml_type.h"

namespace fluoro {

std::string step_trace_error(const StepTrace& t) {
    if (t.threads < 1) return "threads " + std::to_string(t.threads) + " < 1";
    if (t.dropped < 0) return "dropped " + std::to_string(t.dropped) + " < 0";
    for (size_t i = 0; i < t.ops.size(); ++i) {
        const OpSpan& op = t.ops[i];
        const std::string at = "op " + std::to_string(i) + ": ";
        if (op.name < 0 || size_t(op.name) >= t.names.size())
            return at + "name " + std::to_string(op.name) + " outside the " +
                   std::to_string(t.names.size()) + " names";
        if (int(op.category) < 0 || size_t(op.category) >= kTimeCategories)
            return at + "category " + std::to_string(int(op.category)) + " unknown";
        if (op.end_ns < op.start_ns) return at + "ends before it starts";
        if (op.layer < -1 || op.rows < 0) return at + "negative layer or rows";
        if (op.weight_type != -1 &&
            (op.weight_type < 0 || !find_type_traits(uint32_t(op.weight_type))))
            return at + "weight type " + std::to_string(op.weight_type) + " unknown";
        if (op.shape[0] < 0 || op.shape[1] < 0) return at + "negative shape";
        if (!(op.bytes >= 0) || !(op.flops >= 0)) return at + "bytes or FLOPs not >= 0";
    }
    for (size_t i = 0; i < t.workers.size(); ++i) {
        const WorkerBusy& w = t.workers[i];
        const std::string at = "worker span " + std::to_string(i) + ": ";
        if (w.worker < 0 || w.worker >= t.threads)
            return at + "worker " + std::to_string(w.worker) + " outside [0, " +
                   std::to_string(t.threads) + ")";
        if (w.end_ns < w.start_ns) return at + "ends before it starts";
        if (w.tasks < 0) return at + "negative tasks";
    }
    return "";
}

TensorOpName tensor_op_name(std::string_view tensor) {
    TensorOpName out{-1, tensor};
    std::string_view rest = tensor;
    if (rest.starts_with("blk.")) {
        rest.remove_prefix(4);
        const size_t dot = rest.find('.');
        int32_t layer = -1;
        if (dot == std::string_view::npos || dot == 0) return out;
        const auto [end, ec] = std::from_chars(rest.data(), rest.data() + dot, layer);
        if (ec != std::errc() || end != rest.data() + dot || layer < 0) return out;
        out.layer = layer;
        rest.remove_prefix(dot + 1);
    }
    // One matrix of a stacked tensor ("ffn_gate_exps.weight[expert 3]", "attn_k_b.weight[head 0]",
    // "attn_qkv.weight[rows 0..64)") is the op of the whole tensor: its calls add up there.
    if (const size_t open = rest.find('['); open != std::string_view::npos && open > 0)
        rest = rest.substr(0, open);
    if (rest.ends_with(".weight")) rest.remove_suffix(7);  // a bias keeps ".bias"
    out.op = rest;
    return out;
}

}  // namespace fluoro
