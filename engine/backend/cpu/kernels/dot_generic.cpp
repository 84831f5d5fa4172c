// The row dot kernels compiled for the baseline instruction set of the build.
#include "backend/cpu/kernels/dot_kernels.h"

namespace fluoro::cpu::detail {

const DotTable& generic_dot_table() {
    static const DotTable table = make_dot_table();
    return table;
}

}  // namespace fluoro::cpu::detail
