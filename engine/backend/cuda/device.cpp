#include "backend/cuda/device.h"

#include <cuda_runtime_api.h>

#include <string>

#include "backend/cuda/kernel_image.h"

namespace fluoro::cuda {

namespace {

std::string describe(cudaError_t err) {
    std::string text = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    // The runtime reports a machine with no NVIDIA driver at all as an "insufficient" driver.
    if (err == cudaErrorInsufficientDriver) {
        text += " (no NVIDIA driver is installed, or it is older than CUDA runtime ";
        int runtime = 0;
        cudaRuntimeGetVersion(&runtime);
        text += std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10) + ")";
    }
    return text;
}

}  // namespace

DeviceStatus probe_devices() {
    DeviceStatus status;
    const cudaError_t count_err = cudaGetDeviceCount(&status.device_count);
    if (count_err != cudaSuccess) {
        cudaGetLastError();  // leave no error behind for the next runtime call
        status.device_count = 0;
        status.reason = "cudaGetDeviceCount failed: " + describe(count_err);
        return status;
    }
    if (status.device_count == 0) {
        status.reason = "the CUDA runtime found no device";
        return status;
    }

    cudaDeviceProp prop{};
    const cudaError_t prop_err = cudaGetDeviceProperties(&prop, 0);
    if (prop_err != cudaSuccess) {
        cudaGetLastError();
        status.reason = "cudaGetDeviceProperties(0) failed: " + describe(prop_err);
        return status;
    }
    status.name = prop.name;
    status.cc_major = prop.major;
    status.cc_minor = prop.minor;
    status.total_mem = prop.totalGlobalMem;

    const cudaError_t image_err = detail::kernel_image_status();
    if (image_err != cudaSuccess) {
        cudaGetLastError();
        status.reason =
            "device 0 (" + status.name + ", compute capability " + std::to_string(prop.major) +
            "." + std::to_string(prop.minor) +
            ") cannot run this build's kernels (built for sm_90 and newer): " + describe(image_err);
        return status;
    }
    status.available = true;
    return status;
}

}  // namespace fluoro::cuda
