#include "backend/cpu/kernels/vec_dot.h"

#include <cstdlib>
#include <string>
#include <string_view>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

#include "backend/cpu/kernels/dot_table.h"
#include "core/error.h"

namespace fluoro::cpu {
namespace {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// __builtin_cpu_supports checks that the OS saves the AVX/AVX-512 registers too; clang 14 has no
// "f16c" for it, so that bit comes from cpuid leaf 1 (ECX bit 29).
bool cpu_has_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
}
bool cpu_has_avx2() {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
}
bool cpu_has_avx512() {
    return cpu_has_avx2() && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512vnni");
}
#else
bool cpu_has_avx2() {
    return false;
}
bool cpu_has_avx512() {
    return false;
}
#endif

const detail::DotTable& dot_table(CpuIsa isa) {
    if (!cpu_isa_supported(isa)) {
        throw UnsupportedError("CPU dot kernels: this build or CPU has no " +
                               std::string(cpu_isa_name(isa)) + " kernels");
    }
    switch (isa) {
        case CpuIsa::Avx512:
            return detail::avx512_dot_table();
        case CpuIsa::Avx2:
            return detail::avx2_dot_table();
        case CpuIsa::Generic:
            break;
    }
    return detail::generic_dot_table();
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

CpuIsa pick_cpu_isa() {
    CpuIsa isa = CpuIsa::Avx512;
    if (const char* forced = std::getenv("FLUORO_CPU_ISA")) {
        const std::string_view name(forced);
        for (CpuIsa candidate : {CpuIsa::Generic, CpuIsa::Avx2, CpuIsa::Avx512})
            if (name == cpu_isa_name(candidate)) isa = candidate;
    }
    while (isa != CpuIsa::Generic && !cpu_isa_supported(isa))
        isa = static_cast<CpuIsa>(static_cast<int>(isa) - 1);
    return isa;
}

}  // namespace

std::string_view cpu_isa_name(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::Avx2:
            return "avx2";
        case CpuIsa::Avx512:
            return "avx512";
        case CpuIsa::Generic:
            break;
    }
    return "generic";
}

bool cpu_isa_supported(CpuIsa isa) {
    // Asked on every matmul: probe once (cpuid traps to the hypervisor in a VM, ~1 us a call).
    static const bool avx2 = detail::avx2_dot_table_compiled() && cpu_has_avx2();
    static const bool avx512 = avx2 && detail::avx512_dot_table_compiled() && cpu_has_avx512();
    switch (isa) {
        case CpuIsa::Avx512:
            return avx512;
        case CpuIsa::Avx2:
            return avx2;
        case CpuIsa::Generic:
            break;
    }
    return true;
}

CpuIsa best_cpu_isa() {
    static const CpuIsa isa = pick_cpu_isa();
    return isa;
}

std::string_view cpu_isa_name() {
    return cpu_isa_name(best_cpu_isa());
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
        case GgmlType::MXFP4:
            return GgmlType::Q8_0;
        case GgmlType::Q4_1:
        case GgmlType::Q5_1:
            return GgmlType::Q8_1;
        case GgmlType::Q2_K:
        case GgmlType::Q3_K:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K:
        case GgmlType::IQ4_XS:
        case GgmlType::IQ2_XXS:
        case GgmlType::IQ2_XS:
        case GgmlType::IQ2_S:
        case GgmlType::IQ3_XXS:
        case GgmlType::IQ3_S:
        case GgmlType::IQ1_S:
        case GgmlType::IQ1_M:
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

RowPairDotFn row_pair_dot_fn(GgmlType weight, CpuIsa isa) {
    dot_table(isa);  // throws for an instruction set this CPU lacks
    const auto id = static_cast<size_t>(weight);
    if (isa != CpuIsa::Avx512 || id >= detail::kDotTableSize) return nullptr;
    return detail::avx512_pair_dot_table()[id];
}

RowGroupDotFn row_group_dot_fn(GgmlType weight, CpuIsa isa) {
    dot_table(isa);  // throws for an instruction set this CPU lacks
    const auto id = static_cast<size_t>(weight);
    if (isa == CpuIsa::Generic || id >= detail::kDotTableSize) return nullptr;
    return (isa == CpuIsa::Avx512 ? detail::avx512_group_dot_table()
                                  : detail::avx2_group_dot_table())[id];
}

RowGroupDotFn row_group_pair_dot_fn(GgmlType weight, CpuIsa isa) {
    dot_table(isa);  // throws for an instruction set this CPU lacks
    const auto id = static_cast<size_t>(weight);
    if (isa != CpuIsa::Avx512 || id >= detail::kDotTableSize) return nullptr;
    return detail::avx512_group_pair_dot_table()[id];
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
