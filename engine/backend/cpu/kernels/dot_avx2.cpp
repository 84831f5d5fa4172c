// The row dot kernels compiled again with AVX2 enabled, for CPUs that have it (chosen at run time
// by best_cpu_isa()). The code is dot_kernels.h unchanged: the compiler vectorizes the int8 dot
// products and unpacking 32 bytes at a time. FMA stays disabled so the float steps round exactly
// as the generic build does (the two tables give bit-identical results; the tests check it).
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

#include "backend/cpu/kernels/dot_table.h"
#include "backend/cpu/kernels/vec_dot.h"
#include "tensor/blocks.h"
#include "tensor/ggml_type.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FLUORO_DOT_AVX2 1
#endif

#if FLUORO_DOT_AVX2
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif

#include "backend/cpu/kernels/dot_kernels.h"

namespace fluoro::cpu::detail {
namespace {

DotTable make_avx2_dot_table() {
    return make_dot_table();
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
#else
bool avx2_dot_table_compiled() {
    return false;
}

const DotTable& avx2_dot_table() {
    return generic_dot_table();
}
#endif

}  // namespace fluoro::cpu::detail
