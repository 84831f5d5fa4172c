#include "backend/cpu/kernels/vec_dot.h"

#include <cstdlib>
#include <string>
#include <string_view>

#include "backend/cpu/kernels/dot_table.h"
#include "core/error.h"

namespace fluoro::cpu {
namespace {

bool cpu_has_avx2() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    return __builtin_cpu_supports("avx2");
#else
    return false;
#endif
}

const detail::DotTable& dot_table(CpuIsa isa) {
    if (isa == CpuIsa::Generic) return detail::generic_dot_table();
    if (!detail::avx2_dot_table_compiled() || !cpu_has_avx2())
        throw UnsupportedError("CPU dot kernels: this build or CPU has no AVX2 kernels");
    return detail::avx2_dot_table();
}

RowDotFn find_row_dot(GgmlType weight, CpuIsa isa) {
    const auto id = static_cast<size_t>(weight);
    const detail::DotTable& table = dot_table(isa);
    return id < table.size() ? table[id] : nullptr;
}

[[noreturn]] void throw_unsupported(GgmlType weight) {
    throw UnsupportedError("CPU matmul: no dot kernel for weights of type " +
                           std::string(type_name(weight)));
}

}  // namespace

CpuIsa best_cpu_isa() {
    static const CpuIsa isa = [] {
        const char* forced = std::getenv("FLUORO_CPU_ISA");
        if (forced && std::string_view(forced) == "generic") return CpuIsa::Generic;
        return detail::avx2_dot_table_compiled() && cpu_has_avx2() ? CpuIsa::Avx2 : CpuIsa::Generic;
    }();
    return isa;
}

bool vec_dot_supported(GgmlType weight) {
    return find_row_dot(weight, CpuIsa::Generic) != nullptr;
}

GgmlType vec_dot_partner(GgmlType weight) {
    switch (weight) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16:
            return weight;
        case GgmlType::Q4_0:
        case GgmlType::Q5_0:
        case GgmlType::Q8_0:
        case GgmlType::IQ4_NL:
            return GgmlType::Q8_0;
        case GgmlType::Q4_1:
        case GgmlType::Q5_1:
            return GgmlType::Q8_1;
        case GgmlType::Q2_K:
        case GgmlType::Q3_K:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K:
            return GgmlType::Q8_K;
        default:
            throw_unsupported(weight);
    }
}

RowDotFn row_dot_fn(GgmlType weight, CpuIsa isa) {
    const RowDotFn fn = find_row_dot(weight, isa);
    if (!fn) throw_unsupported(weight);
    return fn;
}

float vec_dot(GgmlType weight_type, const void* w_row, const void* x_row, int64_t n) {
    const RowDotFn fn = row_dot_fn(weight_type);
    const int64_t block = type_traits(weight_type).block_elems;
    if (n < 0 || n % block != 0) {
        throw Error("vec_dot: " + std::to_string(n) + " elements is not a whole number of " +
                    std::string(type_name(weight_type)) + " blocks (" + std::to_string(block) +
                    " elements each)");
    }
    float out = 0;
    fn(w_row, x_row, 0, 1, n, &out);
    return out;
}

}  // namespace fluoro::cpu
