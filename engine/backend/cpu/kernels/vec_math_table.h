// Internal to the CPU kernels: the per-instruction-set VecMath tables (vec_math.h), one per
// translation unit compiled for its target (vec_math_generic.cpp, vec_math_avx2.cpp,
// vec_math_avx512.cpp).
#pragma once

#include "backend/cpu/kernels/vec_math.h"

namespace fluoro::cpu::detail {

const VecMath& generic_vec_math();
// Only call when the CPU has AVX2 + FMA + F16C (resp. AVX-512 F/BW/VL/DQ as well) and the file
// was compiled with it (avx2_dot_table_compiled() / avx512_dot_table_compiled()).
const VecMath& avx2_vec_math();
const VecMath& avx512_vec_math();

}  // namespace fluoro::cpu::detail
