#include "backend/cpu/cpu_only_factory.h"

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"

namespace fluoro {

std::unique_ptr<Backend> make_cpu_only_backend(BackendKind kind, int threads) {
    if (kind == BackendKind::Cuda)
        throw Error(
            "this program was built without the CUDA backend (configure with "
            "-DFLUORO_CUDA=ON on a machine with the CUDA toolkit)");
    return std::make_unique<cpu::CpuBackend>(threads);
}

}  // namespace fluoro
