#include "backend/cpu/kernels/vec_math.h"

#include <string>

#include "backend/cpu/kernels/vec_math_table.h"
#include "core/error.h"

namespace fluoro::cpu {

const VecMath& vec_math(CpuIsa isa) {
    if (!cpu_isa_supported(isa)) {
        throw UnsupportedError("CPU vector kernels: this build or CPU has no " +
                               std::string(cpu_isa_name(isa)) + " code");
    }
    switch (isa) {
        case CpuIsa::Avx512:
            return detail::avx512_vec_math();
        case CpuIsa::Avx2:
            return detail::avx2_vec_math();
        case CpuIsa::Generic:
            break;
    }
    return detail::generic_vec_math();
}

}  // namespace fluoro::cpu
