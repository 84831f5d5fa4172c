#include "session/backend_factory.h"

#include "backend/cpu/cpu_only_factory.h"

#ifdef FLUORO_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device.h"
#endif

namespace fluoro::app {

std::unique_ptr<Backend> make_backend(BackendKind kind, int threads) {
#ifdef FLUORO_HAVE_CUDA
    if (kind == BackendKind::Cuda) return std::make_unique<cuda::CudaBackend>(0);
#endif
    return make_cpu_only_backend(kind, threads);
}

bool cuda_built() {
#ifdef FLUORO_HAVE_CUDA
    return true;
#else
    return false;
#endif
}

std::string cuda_status() {
#ifdef FLUORO_HAVE_CUDA
    const cuda::DeviceStatus s = cuda::probe_devices();
    if (!s.available) return "unavailable: " + s.reason;
    return s.name + ", compute capability " + std::to_string(s.cc_major) + "." +
           std::to_string(s.cc_minor) + ", " + std::to_string(s.total_mem >> 20) + " MiB";
#else
    return "not built into this program";
#endif
}

}  // namespace fluoro::app
