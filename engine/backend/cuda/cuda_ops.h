// The elementwise and row-wise operations of the forward pass on the GPU: RMSNorm, RoPE (both
// pairings), gated activations, soft-capping, residual adds, row gathers, and the re-rotation of
// cached keys after a KV compaction. Each matches the CPU backend (backend/cpu/cpu_backend.cpp),
// the reference, to within f32 rounding (the tests compare them). All pointers are device
// memory; every launch is asynchronous on `stream` and checked (Error naming the kernel).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "backend/cuda/cuda_attention.h"
#include "backend/rope.h"
#include "tensor/ggml_type.h"

namespace fluoro::cuda {

// y = x / sqrt(mean(x^2) + eps) * w over each group of `group` values (rows x width, width a
// multiple of group; w holds group values of w_type F32, F16 or BF16). x == y allowed.
void rms_norm(const float* x, int64_t rows, int64_t width, const void* w, GgmlType w_type,
              int64_t group, float eps, float* y, cudaStream_t stream);

// One RoPE call's constants: n_rot rotated dims per head, the angle constants of
// backend/rope.h (rope_coeffs on the host), llama3's per-pair frequency divisors (device memory,
// n_rot / 2 floats; nullptr = none) and the pairing (neox: (i, i + n_rot/2); else (2i, 2i+1)).
struct RopeArgs {
    int64_t n_rot = 0;
    RopeCoeffs coeffs;
    const float* factors = nullptr;
    bool neox = false;
};
// The args of plain RoPE (no scaling but freq_scale).
RopeArgs plain_rope(int64_t n_rot, float freq_base, float freq_scale, bool neox);

// In place on rows x (n_head * head_dim): rotates the first n_rot dims of each head by the
// angles of rope_cos_sin (backend/rope.h) at pos[row], theta stepped in f32 as the CPU does.
void rope(float* x, int64_t rows, int64_t n_head, int64_t head_dim, const RopeArgs& a,
          const int32_t* pos, cudaStream_t stream);
// rope() of q (n_head_q heads) and of k (n_head_k heads) at the same positions, in one launch.
void rope_pair(float* q, int64_t n_head_q, float* k, int64_t n_head_k, int64_t rows,
               int64_t head_dim, const RopeArgs& a, const int32_t* pos, cudaStream_t stream);
// The plain forms (the kernels' own tests).
inline void rope(float* x, int64_t rows, int64_t n_head, int64_t head_dim, int64_t n_rot,
                 float freq_base, float freq_scale, bool neox, const int32_t* pos,
                 cudaStream_t stream) {
    rope(x, rows, n_head, head_dim, plain_rope(n_rot, freq_base, freq_scale, neox), pos, stream);
}
inline void rope_pair(float* q, int64_t n_head_q, float* k, int64_t n_head_k, int64_t rows,
                      int64_t head_dim, int64_t n_rot, float freq_base, float freq_scale, bool neox,
                      const int32_t* pos, cudaStream_t stream) {
    rope_pair(q, n_head_q, k, n_head_k, rows, head_dim,
              plain_rope(n_rot, freq_base, freq_scale, neox), pos, stream);
}

// Re-rotation of cached keys: for i < n, the K row at pool row rows[i] of `layer` (n_head_kv
// heads of head_dim, element type layer.elem) is rotated by deltas[i] positions, with the same
// theta stepping as rope() (a.coeffs a pure rotation: rope_coeffs(p, false)). rows and deltas
// are device arrays.
void rope_shift_kv(const KvLayerDev& layer, int64_t n_head_kv, int64_t head_dim, const RopeArgs& a,
                   const int32_t* rows, const int32_t* deltas, int64_t n, cudaStream_t stream);
inline void rope_shift_kv(const KvLayerDev& layer, int64_t n_head_kv, int64_t head_dim,
                          int64_t n_rot, float freq_base, float freq_scale, bool neox,
                          const int32_t* rows, const int32_t* deltas, int64_t n,
                          cudaStream_t stream) {
    rope_shift_kv(layer, n_head_kv, head_dim, plain_rope(n_rot, freq_base, freq_scale, neox), rows,
                  deltas, n, stream);
}

void add(float* x, const float* y, int64_t n, cudaStream_t stream);  // x += y
// x += addend, then y = rms_norm(x) * w over whole rows (group = width): add() then rms_norm(),
// bit for bit, in one launch where rms_norm() would use its block kernel. y may be addend.
void add_rms_norm(float* x, const float* addend, int64_t rows, int64_t width, const void* w,
                  GgmlType w_type, float eps, float* y, cudaStream_t stream);
void scale(float* x, float s, int64_t n, cudaStream_t stream);  // x *= s
// y[r, :] += bias (width values of bias_type F32/F16/BF16)
void add_bias(float* y, int64_t rows, int64_t width, const void* bias, GgmlType bias_type,
              cudaStream_t stream);
void swiglu(float* gate, const float* up, int64_t n, cudaStream_t stream);  // silu(g) * u
// gpt-oss: g' = min(g, limit), u' = clamp(u, -limit, limit), g = g' sigmoid(alpha g') (u' + 1)
void swiglu_oai(float* gate, const float* up, float alpha, float limit, int64_t n,
                cudaStream_t stream);
// Attention sinks (backend.h AttentionParams::sinks): out row (t, h) *= e^L / (e^L + e^sink[h])
// and lse[t, h] = log(e^L + e^sink[h]), for n_tok x n_head rows of head_dim_v values.
void apply_sinks(float* out, float* lse, const float* sinks, int64_t n_tok, int64_t n_head,
                 int64_t head_dim_v, cudaStream_t stream);
void geglu_tanh(float* gate, const float* up, int64_t n, cudaStream_t stream);  // gelu_tanh(g)*u
void softcap(float* x, float cap, int64_t n, cudaStream_t stream);  // cap * tanh(x / cap)
// y[i, :] = x[rows[i], :] for i < n (rows: device array); x and y do not overlap.
void gather_rows(const float* x, int64_t width, const int32_t* rows, int64_t n, float* y,
                 cudaStream_t stream);

// Backend::copy_blocks on device rows (x_width, y_width: the row strides), checked by the caller.
void copy_blocks(const float* x, int64_t x_width, float* y, int64_t y_width, int64_t rows,
                 int64_t width, int64_t n_blocks, int64_t x_offset, int64_t x_stride,
                 int64_t y_offset, int64_t y_stride, cudaStream_t stream);

}  // namespace fluoro::cuda
