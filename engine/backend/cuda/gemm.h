// Matrix products on the GPU through cuBLAS: the prefill projection out = X · Wᵀ with weights
// stored as rows (as GGUF stores them), plus an owning handle for cuBLAS.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace fluoro::cuda {

// Owns a cuBLAS handle (move-only). Its math mode is CUBLAS_DEFAULT_MATH: full f32 products,
// no TF32, so gemm_f32 stays within f32 rounding of the CPU. Throws Error without a device.
class CublasHandle {
  public:
    CublasHandle();
    ~CublasHandle();
    CublasHandle(CublasHandle&& other) noexcept;
    CublasHandle& operator=(CublasHandle&& other) noexcept;
    CublasHandle(const CublasHandle&) = delete;
    CublasHandle& operator=(const CublasHandle&) = delete;

    cublasHandle_t get() const { return handle_; }

  private:
    cublasHandle_t handle_ = nullptr;
};

// d_out[n_tok, n_out] = d_x[n_tok, n_in] · d_w[n_out, n_in]ᵀ; all f32, row-major, contiguous,
// device memory. Runs on `stream` (the handle is bound to it). Dimensions must fit in int
// (cuBLAS' limit); n_in == 0 gives zeros. Throws Error on bad sizes or a cuBLAS failure.
void gemm_f32(cublasHandle_t handle, const float* d_x, const float* d_w, float* d_out,
              int64_t n_tok, int64_t n_in, int64_t n_out, cudaStream_t stream);

}  // namespace fluoro::cuda
