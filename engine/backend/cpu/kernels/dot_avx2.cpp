// The row dot kernels for CPUs with AVX2, FMA and F16C (chosen at run time by best_cpu_isa()):
// the hand-written kernels of dot_x86_kernels.h for the hot types, and for the rest dot_kernels.h
// compiled again with AVX2 enabled (the compiler vectorizes their int8 dot products and
// unpacking; without -ffp-contract those keep the generic float results bit for bit).
//
// Every header with external-linkage code is included before the target switch, so no inline
// function or template outside dot_kernels.h (whose contents have internal linkage) is compiled
// with AVX2 and then shared with generic code by the linker.
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <immintrin.h>

#include "backend/cpu/kernels/dot_table.h"
#include "backend/cpu/kernels/interleave.h"
#include "backend/cpu/kernels/vec_dot.h"
#include "tensor/blocks.h"
#include "tensor/ggml_type.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FLUORO_DOT_AVX2 1
#endif

#if FLUORO_DOT_AVX2
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

#include "backend/cpu/kernels/dot_kernels.h"
#include "backend/cpu/kernels/dot_x86_interleaved.h"
#include "backend/cpu/kernels/dot_x86_interleaved_k.h"
#include "backend/cpu/kernels/dot_x86_kernels.h"

namespace fluoro::cpu::detail {
namespace {

DotTable make_avx2_dot_table() {
    DotTable table = make_dot_table();
    x86::set_x86_kernels(table);
    return table;
}

GroupDotTable make_avx2_group_dot_table() {
    GroupDotTable table{};
    x86::set_x86_group_kernels(table);
    x86::set_x86_k_group_kernels(table);
    return table;
}

}  // namespace
}  // namespace fluoro::cpu::detail

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif  // FLUORO_DOT_AVX2

namespace fluoro::cpu::detail {

#if FLUORO_DOT_AVX2
bool avx2_dot_table_compiled() {
    return true;
}

const DotTable& avx2_dot_table() {
    static const DotTable table = make_avx2_dot_table();
    return table;
}

const GroupDotTable& avx2_group_dot_table() {
    static const GroupDotTable table = make_avx2_group_dot_table();
    return table;
}
#else
bool avx2_dot_table_compiled() {
    return false;
}

const DotTable& avx2_dot_table() {
    return generic_dot_table();
}

const GroupDotTable& avx2_group_dot_table() {
    static const GroupDotTable none{};
    return none;
}
#endif

}  // namespace fluoro::cpu::detail
