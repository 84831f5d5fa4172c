// Matrix products against GGUF weights kept in their quantized formats in device memory: the
// decode path (a handful of rows) runs dequantize-and-dot GEMV kernels that read each weight byte
// once; larger batches (prefill, speculative verification) dequantize the weight to F16 in a
// scratch buffer and run a cuBLAS tensor-core GEMM with f32 accumulation. Also the embedding
// lookup (get_rows), which dequantizes only the rows asked for.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "tensor/ggml_type.h"

namespace fluoro::cuda {

// Types the kernels cover: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K.
bool can_matmul(GgmlType type);

// Batches of at most this many rows use the GEMV kernels (weights read once for all rows).
inline constexpr int64_t kGemvMaxTokens = 8;

// Owns the cuBLAS handle and the scratch of one stream. Not thread-safe (one per backend).
class Matmul {
  public:
    explicit Matmul(cudaStream_t stream);  // Error without a device
    ~Matmul();
    Matmul(const Matmul&) = delete;
    Matmul& operator=(const Matmul&) = delete;

    // Allocates the GEMM scratch for batches of up to max_tokens rows of up to max_in inputs and
    // weights of up to max_weight_elems elements, so run() allocates nothing later.
    void reserve(int64_t max_tokens, int64_t max_in, int64_t max_weight_elems);
    size_t scratch_bytes() const;

    // d_y[t, o] = sum_i W[o, i] * d_x[t, i] for t < n_tok, o < n_out. W: n_out rows of n_in
    // elements of `type`, each row_bytes long, back to back (a GGUF tensor as uploaded). d_x is
    // n_tok x n_in f32, d_y n_tok x n_out f32, both contiguous device memory. Asynchronous on the
    // stream. Throws UnsupportedError for a type outside can_matmul, Error for bad sizes (n_in
    // not a multiple of the type's block) or a failed launch / cuBLAS call.
    void run(GgmlType type, const void* d_w, size_t row_bytes, int64_t n_in, int64_t n_out,
             const float* d_x, int64_t n_tok, float* d_y);

    // Several products of the same input d_x (n_tok x n_in): q/k/v, gate/up. With n_tok <=
    // kGemvMaxTokens, the outputs whose weights share a block-quantized type and are small enough
    // for one warp per row go out in one kernel launch; everything else as run() would. Same
    // results as one run() per output, bit for bit (each row is computed the same way).
    struct Output {
        GgmlType type;
        const void* d_w;
        size_t row_bytes;
        int64_t n_out;
        float* d_y;
    };
    void run_many(std::span<const Output> outs, int64_t n_in, const float* d_x, int64_t n_tok);

    // The two paths directly (tests and benchmarks): GEMV for any n_tok (slow for many), and
    // the dequantize + cuBLAS path for any n_tok.
    void run_gemv(GgmlType type, const void* d_w, size_t row_bytes, int64_t n_in, int64_t n_out,
                  const float* d_x, int64_t n_tok, float* d_y);
    void run_gemm(GgmlType type, const void* d_w, size_t row_bytes, int64_t n_in, int64_t n_out,
                  const float* d_x, int64_t n_tok, float* d_y);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// d_y[i, :] = the dequantized row d_ids[i] of a table of n_rows_table rows of row_len elements
// of `type` (row_bytes each), for i < n. An id outside [0, n_rows_table) gives a row of zeros
// (the host checks ids before calling). Asynchronous on `stream`.
void get_rows(GgmlType type, const void* d_table, size_t row_bytes, int64_t row_len,
              int64_t n_rows_table, const int32_t* d_ids, int64_t n, float* d_y,
              cudaStream_t stream);

}  // namespace fluoro::cuda
