// The row dot kernels for CPUs with AVX-512 F/BW/VL and VNNI (chosen at run time by
// best_cpu_isa()): the AVX2 table with the kernels of dot_x86_kernels.h compiled again so that
// their int8 dot products use vpdpbusd (one instruction for maddubs + madd, never saturating).
//
// As in dot_avx2.cpp, every header with external-linkage code is included before the target
// switch.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <immintrin.h>

#include "backend/cpu/kernels/dot_table.h"
#include "backend/cpu/kernels/interleave.h"
#include "backend/cpu/kernels/vec_dot.h"
#include "tensor/blocks.h"
#include "tensor/ggml_type.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FLUORO_DOT_AVX512 1
#endif

#if FLUORO_DOT_AVX512
#if defined(__clang__)
#pragma clang attribute push(                                                               \
    __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))), \
    apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
#endif

#define FLUORO_DOT_VNNI 1
#include "backend/cpu/kernels/dot_kernels.h"  // the IQ grid decoders, compiled for this target
#include "backend/cpu/kernels/dot_x86_interleaved.h"
#include "backend/cpu/kernels/dot_x86_interleaved_k.h"
#include "backend/cpu/kernels/dot_x86_kernels.h"

namespace fluoro::cpu::detail {
namespace {

DotTable make_avx512_dot_table() {
    DotTable table = avx2_dot_table();
    x86::set_x86_kernels(table);
    return table;
}

PairDotTable make_avx512_pair_dot_table() {
    PairDotTable table{};
    x86::set_x86_pair_kernels(table);
    return table;
}

GroupDotTable make_avx512_group_dot_table() {
    GroupDotTable table{};
    x86::set_x86_group_kernels(table);
    x86::set_x86_k_group_kernels(table);
    return table;
}

GroupDotTable make_avx512_group_pair_dot_table() {
    GroupDotTable table{};
    x86::set_x86_group_pair_kernels(table);
    x86::set_x86_k_group_pair_kernels(table);
    return table;
}

}  // namespace
}  // namespace fluoro::cpu::detail

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif  // FLUORO_DOT_AVX512

namespace fluoro::cpu::detail {

#if FLUORO_DOT_AVX512
bool avx512_dot_table_compiled() {
    return true;
}

const DotTable& avx512_dot_table() {
    static const DotTable table = make_avx512_dot_table();
    return table;
}

const PairDotTable& avx512_pair_dot_table() {
    static const PairDotTable table = make_avx512_pair_dot_table();
    return table;
}

const GroupDotTable& avx512_group_dot_table() {
    static const GroupDotTable table = make_avx512_group_dot_table();
    return table;
}

const GroupDotTable& avx512_group_pair_dot_table() {
    static const GroupDotTable table = make_avx512_group_pair_dot_table();
    return table;
}
#else
bool avx512_dot_table_compiled() {
    return false;
}

const DotTable& avx512_dot_table() {
    return avx2_dot_table();
}

const PairDotTable& avx512_pair_dot_table() {
    static const PairDotTable none{};
    return none;
}

const GroupDotTable& avx512_group_dot_table() {
    return avx2_group_dot_table();
}

const GroupDotTable& avx512_group_pair_dot_table() {
    static const GroupDotTable none{};
    return none;
}
#endif

}  // namespace fluoro::cpu::detail
