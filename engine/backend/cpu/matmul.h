// The CPU matrix multiply of the forward pass: y = x · Wᵀ for weights stored in any supported
// ggml type (quantized blocks read in place, e.g. straight from a mapped GGUF file) and float32
// activations. As in ggml-cpu, the activations are first converted to the weight type's partner
// format (Q8_0 / Q8_1 / Q8_K / F16 / BF16, see kernels/vec_dot.h), then integer dot products run
// over output rows split across the thread pool, a tile of tokens at a time so each weight row is
// read once per tile during prefill.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "backend/cpu/thread_pool.h"
#include "tensor/ggml_type.h"

namespace fluoro::cpu {

// A weight matrix of n_out rows of n_in elements (ggml ne = {n_in, n_out}); row o starts at
// data + o * row_bytes. row_bytes is at least fluoro::row_bytes(type, n_in); data and row_bytes
// are 2-byte aligned (4 for F32), as GGUF tensor data is. Rows of a tensor in a GGUF file are
// contiguous: pass exactly row_bytes(type, n_in).
//
// interleaved: the rows are in kernels/interleave.h's groups (interleave_rows()), which needs a
// row_group_dot_fn() for the type on this CPU; row_bytes is then exactly a GGUF row's size.
struct WeightView {
    GgmlType type;
    int64_t n_in;
    int64_t n_out;
    const void* data;
    size_t row_bytes;
    bool interleaved = false;
};

// Caller-owned buffer for the converted activations. reserve() once for the largest matmul the
// caller will run, then matmul() never allocates; an undersized scratch grows (allocating).
class MatmulScratch {
  public:
    // Room for max_tok activation rows of max_n_in elements in any partner format.
    void reserve(int64_t max_tok, int64_t max_n_in);
    size_t capacity() const { return capacity_; }
    const std::byte* data() const { return buffer_.get(); }

    // At least `bytes` bytes, 64-byte aligned; reallocates only when capacity() is smaller.
    std::byte* ensure(size_t bytes);

  private:
    struct Free {
        void operator()(std::byte* p) const;
    };
    std::unique_ptr<std::byte[], Free> buffer_;
    size_t capacity_ = 0;
};

// y[t*n_out + o] = Σ_i W[o, i] · x[t*n_in + i] for t < n_tok, o < n_out.
// x: (n_tok, n_in) float32, y: (n_tok, n_out) float32, both row-major and not overlapping.
// Throws UnsupportedError for a weight type without a CPU kernel (vec_dot_supported) and Error
// for an invalid view (n_in not a whole number of blocks, row_bytes too small, misaligned or null
// data).
// Exceptions from the pool's tasks are rethrown here.
void matmul(ThreadPool& pool, const WeightView& w, const float* x, int64_t n_tok, float* y,
            MatmulScratch& scratch);

// Several weights applied to the same x (q/k/v, gate/up): outs[j].y = x · outs[j].wᵀ, the same
// bits as one matmul() each. Where the weights share n_in and a partner format (and there are at
// most kMaxMatmulTargets), x is converted once and all outputs' row chunks run as one parallel
// region: at decode that saves a conversion and a pool wake-up per extra output.
struct MatmulTarget {
    WeightView w;
    float* y;
};
inline constexpr size_t kMaxMatmulTargets = 4;
void matmul_many(ThreadPool& pool, std::span<const MatmulTarget> outs, const float* x,
                 int64_t n_tok, MatmulScratch& scratch);

// FLUORO_CPU_F32_ACTIVATIONS=1, a diagnostic (read once per process): every matmul dequantizes
// each weight row to float and dots it with the float32 activations, instead of rounding the
// activations to the weight type's 8-bit partner first (as ggml does). It measures what that
// rounding costs in exactness (`fluoro eval fidelity`); it is slow (a plain float loop, no
// interleaved rows: the backend then keeps every weight in its GGUF layout).
bool f32_activations();

}  // namespace fluoro::cpu
