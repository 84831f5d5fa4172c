// Internal to fluoro_cuda: asks the runtime whether this build's kernels can be loaded on the
// current device (not the case on a GPU older than the architectures compiled in).
#pragma once

#include <cuda_runtime_api.h>

namespace fluoro::cuda::detail {

// cudaSuccess, or the runtime's error (typically cudaErrorNoKernelImageForDevice).
cudaError_t kernel_image_status();

}  // namespace fluoro::cuda::detail
