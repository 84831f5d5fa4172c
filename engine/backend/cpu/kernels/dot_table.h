// Internal to the CPU kernels: the per-instruction-set tables of row dot kernels, indexed by ggml
// type id. dot_generic.cpp and dot_avx2.cpp each compile dot_kernels.h once; dot_avx2.cpp and
// dot_avx512.cpp then put their hand-written kernels (dot_x86_kernels.h) over the hot types.
#pragma once

#include <array>
#include <cstddef>

#include "backend/cpu/kernels/vec_dot.h"

namespace fluoro::cpu::detail {

inline constexpr size_t kDotTableSize = 40;  // ggml type ids 0..39; null where unsupported
using DotTable = std::array<RowDotFn, kDotTableSize>;
using PairDotTable = std::array<RowPairDotFn, kDotTableSize>;    // null where there is none
using GroupDotTable = std::array<RowGroupDotFn, kDotTableSize>;  // null where there is none

const DotTable& generic_dot_table();

// Whether dot_avx2.cpp was built with AVX2 code (x86-64 with GCC or Clang).
bool avx2_dot_table_compiled();
// Only call when avx2_dot_table_compiled() and the CPU supports AVX2: building it runs AVX2 code.
const DotTable& avx2_dot_table();
// The row-group kernels for interleaved weights (empty when not compiled); same condition.
const GroupDotTable& avx2_group_dot_table();

// Whether dot_avx512.cpp was built with AVX-512 code; the table is the AVX2 one with the
// AVX-512 VNNI kernels over it. Only call when the CPU has AVX2, AVX-512 F/BW/VL and VNNI.
bool avx512_dot_table_compiled();
const DotTable& avx512_dot_table();
// The row-pair kernels of the AVX-512 table (empty when not compiled); same condition.
const PairDotTable& avx512_pair_dot_table();
const GroupDotTable& avx512_group_dot_table();
// The kernels for two adjacent row groups at once (vec_dot.h's row_group_pair_dot_fn; empty when
// not compiled); same condition.
const GroupDotTable& avx512_group_pair_dot_table();

}  // namespace fluoro::cpu::detail
