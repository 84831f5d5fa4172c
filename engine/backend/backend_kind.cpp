#include "backend/backend_kind.h"

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"

namespace fluoro {

std::string_view backend_kind_name(BackendKind k) {
    return k == BackendKind::Cuda ? "cuda" : "cpu";
}

std::optional<BackendKind> parse_backend_kind(std::string_view name) {
    if (name == "cpu") return BackendKind::Cpu;
    if (name == "cuda") return BackendKind::Cuda;
    return std::nullopt;
}

std::unique_ptr<Backend> make_cpu_only_backend(BackendKind kind, int threads) {
    if (kind == BackendKind::Cuda)
        throw Error(
            "this program was built without the CUDA backend (configure with "
            "-DFLUORO_CUDA=ON on a machine with the CUDA toolkit)");
    return std::make_unique<cpu::CpuBackend>(threads);
}

}  // namespace fluoro
