#include "backend/cpu/kernels/quantize_partner.h"

#include <string>

#include "core/error.h"
#include "tensor/quantize.h"

namespace fluoro::cpu {

void quantize_partner_row(GgmlType partner, const float* x, void* dst, int64_t n, CpuIsa isa) {
    if (!cpu_isa_supported(isa)) {
        throw UnsupportedError("quantize_partner_row: this build or CPU has no " +
                               std::string(cpu_isa_name(isa)) + " code");
    }
    const bool simd = isa != CpuIsa::Generic && detail::quantize_x86_compiled();
    const int64_t block = type_traits(partner).block_elems;
    // quantize_row checks n (and throws for other types); the SIMD paths need whole blocks.
    if (!simd || n <= 0 || n % block != 0) return quantize_row(partner, x, dst, n);
    switch (partner) {
        case GgmlType::Q8_0:
            return detail::quantize_q8_0_avx2(x, dst, n / block);
        case GgmlType::Q8_1:
            return detail::quantize_q8_1_avx2(x, dst, n / block);
        case GgmlType::Q8_K:
            return detail::quantize_q8_k_avx2(x, dst, n / block);
        default:
            return quantize_row(partner, x, dst, n);
    }
}

}  // namespace fluoro::cpu
