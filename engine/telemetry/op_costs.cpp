#include "telemetry/op_costs.h"

#include <map>

#include "tensor/ggml_type.h"

namespace fluoro {

std::vector<OpCost> op_costs(const StepTrace& t) {
    std::vector<OpCost> out;
    std::map<int32_t, size_t> index;  // name id -> row
    for (const OpSpan& s : t.ops) {
        auto it = index.find(s.name);
        if (it == index.end()) {
            it = index.emplace(s.name, out.size()).first;
            out.push_back({std::string(t.name_of(s)), s.category, s.weight_type});
        }
        OpCost& o = out[it->second];
        ++o.calls;
        o.ns += s.end_ns - s.start_ns;
        o.bytes += s.bytes;
        o.flops += s.flops;
    }
    return out;
}

bool uses_int8_dot(int32_t weight_type) {
    return weight_type >= 0 && weight_type != int32_t(GgmlType::F32) &&
           weight_type != int32_t(GgmlType::F16) && weight_type != int32_t(GgmlType::BF16);
}

}  // namespace fluoro
