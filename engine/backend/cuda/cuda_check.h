// Error checking for CUDA runtime and cuBLAS calls: FLUORO_CUDA_CHECK / FLUORO_CUBLAS_CHECK turn a
// failed call into a fluoro::Error naming the call, the error and the source file and line.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

#include "core/error.h"

namespace fluoro::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* expr, const char* file,
                                          int line) {
    // Clears the runtime's last-error slot so a caller that catches can carry on (this does
    // not help with sticky errors such as a kernel fault: those poison the context).
    cudaGetLastError();
    throw Error(std::string("CUDA error ") + cudaGetErrorName(err) + " (" +
                cudaGetErrorString(err) + ") in " + expr + " at " + file + ":" +
                std::to_string(line));
}

[[noreturn]] inline void throw_cublas_error(cublasStatus_t status, const char* expr,
                                            const char* file, int line) {
    throw Error(std::string("cuBLAS error ") + cublasGetStatusName(status) + " (" +
                cublasGetStatusString(status) + ") in " + expr + " at " + file + ":" +
                std::to_string(line));
}

}  // namespace fluoro::cuda

#define FLUORO_CUDA_CHECK(expr)                                                            \
    do {                                                                                   \
        const cudaError_t fluoro_cuda_err_ = (expr);                                       \
        if (fluoro_cuda_err_ != cudaSuccess) {                                             \
            ::fluoro::cuda::throw_cuda_error(fluoro_cuda_err_, #expr, __FILE__, __LINE__); \
        }                                                                                  \
    } while (0)

#define FLUORO_CUBLAS_CHECK(expr)                                                                 \
    do {                                                                                          \
        const cublasStatus_t fluoro_cublas_status_ = (expr);                                      \
        if (fluoro_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                     \
            ::fluoro::cuda::throw_cublas_error(fluoro_cublas_status_, #expr, __FILE__, __LINE__); \
        }                                                                                         \
    } while (0)
