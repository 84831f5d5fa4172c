#include "backend/cuda/gemm.h"

#include <climits>
#include <string>
#include <utility>

#include "backend/cuda/cuda_check.h"
#include "core/error.h"

namespace fluoro::cuda {

CublasHandle::CublasHandle() {
    FLUORO_CUBLAS_CHECK(cublasCreate(&handle_));
    // Explicit, so a changed default (or a TF32 mode set elsewhere) can't loosen f32 products.
    const cublasStatus_t status = cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH);
    if (status != CUBLAS_STATUS_SUCCESS) {
        cublasDestroy(handle_);
        FLUORO_CUBLAS_CHECK(status);
    }
}

CublasHandle::~CublasHandle() {
    if (handle_ != nullptr) cublasDestroy(handle_);
}

CublasHandle::CublasHandle(CublasHandle&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)) {}

CublasHandle& CublasHandle::operator=(CublasHandle&& other) noexcept {
    if (this != &other) {
        if (handle_ != nullptr) cublasDestroy(handle_);
        handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
}

void gemm_f32(cublasHandle_t handle, const float* d_x, const float* d_w, float* d_out,
              int64_t n_tok, int64_t n_in, int64_t n_out, cudaStream_t stream) {
    const auto shape = [&] {
        return "[" + std::to_string(n_tok) + ", " + std::to_string(n_in) + "] x [" +
               std::to_string(n_out) + ", " + std::to_string(n_in) + "]^T";
    };
    if (n_tok < 0 || n_in < 0 || n_out < 0 || n_tok > INT_MAX || n_in > INT_MAX ||
        n_out > INT_MAX) {
        throw Error("CUDA gemm_f32: shape " + shape() + " is negative or exceeds cuBLAS' int");
    }
    if (n_tok == 0 || n_out == 0) return;
    if (d_out == nullptr || (n_in != 0 && (d_x == nullptr || d_w == nullptr))) {
        throw Error("CUDA gemm_f32: null device pointer for shape " + shape());
    }
    if (n_in == 0) {  // empty sums; cuBLAS would reject lda = 0
        FLUORO_CUDA_CHECK(cudaMemsetAsync(
            d_out, 0, static_cast<size_t>(n_tok) * static_cast<size_t>(n_out) * sizeof(float),
            stream));
        return;
    }
    FLUORO_CUBLAS_CHECK(cublasSetStream(handle, stream));

    // cuBLAS is column-major; a row-major [r, c] matrix is the column-major [c, r] matrix, i.e.
    // its transpose. So in cuBLAS' terms we compute outᵀ = W · Xᵀ:
    //   C = outᵀ: column-major [n_out, n_tok], ldc = n_out   (row-major out[n_tok, n_out])
    //   A = W:    the buffer is column-major Wᵀ [n_in, n_out], lda = n_in; op(A) = T gives W
    //   B = Xᵀ:   the buffer is column-major Xᵀ [n_in, n_tok], ldb = n_in; op(B) = N
    //   m = n_out, n = n_tok, k = n_in.
    const int m = static_cast<int>(n_out);
    const int n = static_cast<int>(n_tok);
    const int k = static_cast<int>(n_in);
    const float alpha = 1.0f;
    const float beta = 0.0f;  // out is not read
    FLUORO_CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, d_w, k, d_x,
                                    k, &beta, d_out, m));
}

}  // namespace fluoro::cuda
