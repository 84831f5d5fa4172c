// Internal to the CPU kernels: the per-instruction-set tables of row dot kernels, indexed by ggml
// type id. dot_generic.cpp and dot_avx2.cpp each compile dot_kernels.h once and export a table.
#pragma once

#include <array>
#include <cstddef>

#include "backend/cpu/kernels/vec_dot.h"

namespace fluoro::cpu::detail {

inline constexpr size_t kDotTableSize = 40;  // ggml type ids 0..39; null where unsupported
using DotTable = std::array<RowDotFn, kDotTableSize>;

const DotTable& generic_dot_table();

// Whether dot_avx2.cpp was built with AVX2 code (x86-64 with GCC or Clang).
bool avx2_dot_table_compiled();
// Only call when avx2_dot_table_compiled() and the CPU supports AVX2: building it runs AVX2 code.
const DotTable& avx2_dot_table();

}  // namespace fluoro::cpu::detail
