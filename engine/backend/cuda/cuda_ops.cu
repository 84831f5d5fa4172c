// The elementwise and row-wise kernels of the forward pass (cuda_ops.h). Each mirrors the CPU
// backend (backend/cpu/cpu_backend.cpp and the generic VecMath kernels of
// backend/cpu/kernels/vec_math_impl.h):
//
// - rms_norm: the sum of squares accumulates in double, as the CPU's does; then
//   s = 1 / sqrtf(float(sum / n) + eps) and y = (x * s) * w, all IEEE-rounded (nvcc's default
//   -prec-div / -prec-sqrt), so the result matches the CPU to the last bit but for the order of a
//   double sum. Groups of <= kWarpGroupMax values: one warp each; larger ones: one block each.
// - rope / rope_shift_kv: one block per row; the block first fills a table of cos/sin of the
//   angles in shared memory by the CPU's own function (rope_cos_sin, backend/rope.h: theta_0 =
//   float(pos), theta_{i+1} = theta_i * theta_scale in f32, then llama3 factors, linear / YaRN
//   scaling, with constants computed on the host by rope_coeffs), with precise cosf/sinf; then
//   rotates every head's pairs with __fmul_rn/__fadd_rn (no FMA contraction, like the CPU build).
// - the activations use libdevice's precise expf/tanhf where the CPU's SIMD tables use a
//   polynomial exp (relative error < 3e-7), so they agree to a few ulps, not bit for bit.
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_ops.h"
#include "core/error.h"

namespace fluoro::cuda {
namespace {

constexpr int kThreads = 256;             // every kernel here runs 256-thread blocks
constexpr int64_t kMaxGridBlocks = 4096;  // grid-stride loops: 1M threads fill an H200
constexpr int64_t kWarpGroupMax = 256;    // rms_norm groups up to this many values: a warp each
constexpr int64_t kMaxRopeHalf = 4096;    // cos/sin table: 2 * half floats of shared memory

// A failed launch (bad configuration, missing kernel image) as an Error naming the kernel.
void check_launch(const char* kernel, int line) {
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) throw_cuda_error(err, kernel, __FILE__, line);
}
#define FLUORO_CHECK_LAUNCH(kernel) check_launch(#kernel " launch", __LINE__)

unsigned grid_for(int64_t n) {
    return static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxGridBlocks));
}

std::string str(int64_t v) {
    return std::to_string(v);
}

__device__ inline int64_t global_thread() {
    return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t grid_stride() {
    return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

// Weight/bias element i of a row stored as F32, F16 or BF16 (exact conversions to f32).
template <GgmlType T>
__device__ inline float load_w(const void* w, int64_t i) {
    if constexpr (T == GgmlType::F32) {
        return static_cast<const float*>(w)[i];
    } else if constexpr (T == GgmlType::F16) {
        return __half2float(static_cast<const __half*>(w)[i]);
    } else {
        const uint16_t bits = static_cast<const uint16_t*>(w)[i];
        return __uint_as_float(static_cast<uint32_t>(bits) << 16);
    }
}

__device__ inline double warp_sum(double v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__device__ inline float rms_scale(double sum_sq, int64_t group, float eps) {
    return 1.0f / sqrtf(static_cast<float>(sum_sq / static_cast<double>(group)) + eps);
}

// One warp per group; blockDim.x / 32 groups per block. Groups are consecutive in memory.
template <GgmlType W>
__global__ void rms_norm_warp_kernel(const float* x, int64_t n_groups, int64_t group, const void* w,
                                     float eps, float* y) {
    const int lane = static_cast<int>(threadIdx.x & 31);
    const int64_t g = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
    if (g >= n_groups) return;  // uniform across the warp
    const float* xg = x + g * group;
    float* yg = y + g * group;
    double sum = 0.0;
    for (int64_t i = lane; i < group; i += 32) {
        const double v = xg[i];
        sum += v * v;  // exact square (48 bits), so fused or not is the same
    }
    sum = warp_sum(sum);
    const float s = rms_scale(sum, group, eps);
    for (int64_t i = lane; i < group; i += 32)
        yg[i] = __fmul_rn(__fmul_rn(xg[i], s), load_w<W>(w, i));
}

// One block per group. kAdd: first x += addend (stored, as the add kernel would), then the norm
// of the sum: one launch for the residual add and the next norm.
template <GgmlType W, bool kAdd = false>
__global__ void rms_norm_block_kernel(const float* x, int64_t group, const void* w, float eps,
                                      float* y, float* x_sum = nullptr,
                                      const float* addend = nullptr) {
    __shared__ double partial[32];
    const int64_t g = blockIdx.x;
    const float* xg = x + g * group;
    float* yg = y + g * group;
    const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x / 32);
    const int n_warps = static_cast<int>(blockDim.x / 32);
    double sum = 0.0;
    for (int64_t i = threadIdx.x; i < group; i += blockDim.x) {
        double v;
        if constexpr (kAdd) {
            const float s = xg[i] + addend[g * group + i];
            x_sum[g * group + i] = s;  // == xg[i]: re-read below by this same thread
            v = s;
        } else {
            v = xg[i];
        }
        sum += v * v;
    }
    sum = warp_sum(sum);
    if (lane == 0) partial[warp] = sum;
    __syncthreads();
    if (warp == 0) {
        sum = lane < n_warps ? partial[lane] : 0.0;
        sum = warp_sum(sum);
        if (lane == 0) partial[0] = sum;
    }
    __syncthreads();
    const float s = rms_scale(partial[0], group, eps);
    for (int64_t i = threadIdx.x; i < group; i += blockDim.x)
        yg[i] = __fmul_rn(__fmul_rn(xg[i], s), load_w<W>(w, i));
}

template <GgmlType W>
void launch_rms_norm(const float* x, int64_t n_groups, int64_t group, const void* w, float eps,
                     float* y, cudaStream_t stream) {
    if (group <= kWarpGroupMax) {
        constexpr int64_t kGroupsPerBlock = kThreads / 32;
        const auto blocks =
            static_cast<unsigned>((n_groups + kGroupsPerBlock - 1) / kGroupsPerBlock);
        rms_norm_warp_kernel<W><<<blocks, kThreads, 0, stream>>>(x, n_groups, group, w, eps, y);
        FLUORO_CHECK_LAUNCH(rms_norm_warp_kernel);
    } else {
        rms_norm_block_kernel<W>
            <<<static_cast<unsigned>(n_groups), kThreads, 0, stream>>>(x, group, w, eps, y);
        FLUORO_CHECK_LAUNCH(rms_norm_block_kernel);
    }
}

// --- RoPE ---

// cs[i] = cos(angle_i), cs[half + i] = sin(angle_i) by rope_cos_sin (backend/rope.h), theta
// stepped in f32 from theta0 = pos as the CPU does; ends with a barrier.
__device__ inline void fill_rope_table(float* cs, int64_t half, float theta0, const RopeCoeffs& k,
                                       const float* factors) {
    for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
        float theta = theta0;
        for (int64_t j = 0; j < i; ++j) theta *= k.theta_scale;
        rope_cos_sin(theta, factors ? factors[i] : 1.0f, i, k, &cs[i], &cs[half + i]);
    }
    __syncthreads();
}

__device__ inline float to_f32(float v) {
    return v;
}
__device__ inline float to_f32(__half v) {
    return __half2float(v);
}
__device__ inline void store_elem(float* p, float v) {
    *p = v;
}
__device__ inline void store_elem(__half* p, float v) {
    *p = __float2half_rn(v);
}

// Rotates the first 2 * half dims of each of n_head heads of head_dim elements at v.
template <typename E>
__device__ inline void rotate_row(E* v, int64_t n_head, int64_t head_dim, int64_t half, bool neox,
                                  const float* cs) {
    const int64_t n_pairs = n_head * half;
    for (int64_t p = threadIdx.x; p < n_pairs; p += blockDim.x) {
        const int64_t h = p / half, i = p - h * half;
        E* head = v + h * head_dim;
        const int64_t a = neox ? i : 2 * i;
        const int64_t b = neox ? i + half : 2 * i + 1;
        const float x0 = to_f32(head[a]), x1 = to_f32(head[b]);
        const float c = cs[i], s = cs[half + i];
        store_elem(head + a, __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s)));
        store_elem(head + b, __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c)));
    }
}

// blockIdx.y 0 rotates x (n_head heads), 1 rotates x2 (n_head2 heads): queries and keys of the
// same rows in one launch.
__global__ void rope_kernel(float* x, int64_t n_head, int64_t head_dim, int64_t half, bool neox,
                            RopeCoeffs coeffs, const float* factors, const int32_t* pos,
                            float* x2 = nullptr, int64_t n_head2 = 0) {
    extern __shared__ float cs[];
    const int64_t r = blockIdx.x;
    if (blockIdx.y == 1) {
        x = x2;
        n_head = n_head2;
    }
    fill_rope_table(cs, half, static_cast<float>(pos[r]), coeffs, factors);
    rotate_row(x + r * n_head * head_dim, n_head, head_dim, half, neox, cs);
}

template <typename E>
__global__ void rope_shift_kv_kernel(std::byte* k, size_t row_bytes, int64_t n_head,
                                     int64_t head_dim, int64_t half, bool neox, RopeCoeffs coeffs,
                                     const float* factors, const int32_t* rows,
                                     const int32_t* deltas) {
    extern __shared__ float cs[];
    const int64_t i = blockIdx.x;
    fill_rope_table(cs, half, static_cast<float>(deltas[i]), coeffs, factors);
    E* row = reinterpret_cast<E*>(k + static_cast<size_t>(rows[i]) * row_bytes);
    rotate_row(row, n_head, head_dim, half, neox, cs);
}

void check_rope_shape(const char* op, int64_t n_head, int64_t head_dim, int64_t n_rot) {
    if (n_head <= 0 || head_dim <= 0)
        throw Error(std::string("CUDA ") + op + ": n_head " + str(n_head) + " and head_dim " +
                    str(head_dim) + " must be positive");
    if (n_rot < 0 || n_rot % 2 != 0 || n_rot > head_dim)
        throw Error(std::string("CUDA ") + op + ": n_rot " + str(n_rot) +
                    " must be even and within head_dim " + str(head_dim));
    if (n_rot / 2 > kMaxRopeHalf)
        throw Error(std::string("CUDA ") + op + ": n_rot " + str(n_rot) + " exceeds the limit of " +
                    str(2 * kMaxRopeHalf));
}

// --- elementwise ---

__global__ void add_kernel(float* x, const float* y, int64_t n) {
    for (int64_t i = global_thread(); i < n; i += grid_stride()) x[i] = __fadd_rn(x[i], y[i]);
}

__global__ void scale_kernel(float* x, float s, int64_t n) {
    for (int64_t i = global_thread(); i < n; i += grid_stride()) x[i] = __fmul_rn(x[i], s);
}

template <GgmlType B>
__global__ void add_bias_kernel(float* y, int64_t width, const void* bias, int64_t n) {
    for (int64_t i = global_thread(); i < n; i += grid_stride())
        y[i] = __fadd_rn(y[i], load_w<B>(bias, i % width));
}

// silu(g) * u = g / (1 + e^-g) * u, as the CPU evaluates it.
__global__ void swiglu_kernel(float* gate, const float* up, int64_t n) {
    for (int64_t i = global_thread(); i < n; i += grid_stride()) {
        const float g = gate[i];
        gate[i] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), up[i]);
    }
}

// gpt-oss's clamped SwiGLU, as the CPU evaluates it (cpu_backend.cpp).
__global__ void swiglu_oai_kernel(float* gate, const float* up, float alpha, float limit,
                                  int64_t n) {
    for (int64_t i = global_thread(); i < n; i += grid_stride()) {
        const float x = fminf(gate[i], limit), y = fminf(fmaxf(up[i], -limit), limit);
        gate[i] = __fmul_rn(__fdiv_rn(x, __fadd_rn(1.0f, expf(__fmul_rn(-alpha, x)))),
                            __fadd_rn(y, 1.0f));
    }
}

// One thread per (token, head) row: the sink joins the row's softmax denominator.
__global__ void apply_sinks_kernel(float* out, float* lse, const float* sinks, int64_t rows,
                                   int64_t n_head, int64_t dv) {
    for (int64_t r = global_thread(); r < rows; r += grid_stride()) {
        const float L = lse[r], s = sinks[r % n_head];
        const float with_sink = fmaxf(L, s) + log1pf(expf(-fabsf(L - s)));
        const float f = expf(L - with_sink);
        for (int64_t d = 0; d < dv; ++d) out[r * dv + d] = __fmul_rn(out[r * dv + d], f);
        lse[r] = with_sink;
    }
}

// gelu_tanh(g) * u = 0.5 g (1 + tanh(sqrt(2/pi) g (1 + 0.044715 g^2))) * u.
__global__ void geglu_tanh_kernel(float* gate, const float* up, int64_t n) {
    constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
    for (int64_t i = global_thread(); i < n; i += grid_stride()) {
        const float x = gate[i];
        const float inner = __fmul_rn(__fmul_rn(kSqrt2OverPi, x),
                                      __fadd_rn(1.0f, __fmul_rn(__fmul_rn(0.044715f, x), x)));
        const float gelu = __fmul_rn(__fmul_rn(0.5f, x), __fadd_rn(1.0f, tanhf(inner)));
        gate[i] = __fmul_rn(gelu, up[i]);
    }
}

__global__ void softcap_kernel(float* x, float cap, int64_t n) {
    for (int64_t i = global_thread(); i < n; i += grid_stride())
        x[i] = __fmul_rn(cap, tanhf(__fdiv_rn(x[i], cap)));
}

__global__ void gather_rows_kernel(const float* x, int64_t width, const int32_t* rows, int64_t n,
                                   float* y) {
    for (int64_t i = global_thread(); i < n; i += grid_stride()) {
        const int64_t r = i / width, c = i - r * width;
        y[i] = x[static_cast<int64_t>(rows[r]) * width + c];
    }
}

__global__ void copy_blocks_kernel(const float* x, int64_t x_width, float* y, int64_t y_width,
                                   int64_t width, int64_t n_blocks, int64_t x_offset,
                                   int64_t x_stride, int64_t y_offset, int64_t y_stride,
                                   int64_t n) {
    for (int64_t i = global_thread(); i < n; i += grid_stride()) {
        const int64_t j = i % width, rb = i / width, b = rb % n_blocks, r = rb / n_blocks;
        y[r * y_width + y_offset + b * y_stride + j] = x[r * x_width + x_offset + b * x_stride + j];
    }
}

void check_count(const char* op, int64_t n) {
    if (n < 0) throw Error(std::string("CUDA ") + op + ": negative element count " + str(n));
}

void check_16bit_or_f32(const char* op, const char* what, GgmlType t) {
    if (t != GgmlType::F32 && t != GgmlType::F16 && t != GgmlType::BF16)
        throw UnsupportedError(std::string("CUDA ") + op + ": " + what + " type " +
                               std::string(type_name(t)) + " is not supported (F32, F16, BF16)");
}

}  // namespace

void add_rms_norm(float* x, const float* addend, int64_t rows, int64_t width, const void* w,
                  GgmlType w_type, float eps, float* y, cudaStream_t stream) {
    check_16bit_or_f32("add_rms_norm", "weight", w_type);
    if (rows <= 0 || width <= kWarpGroupMax) {  // rms_norm() would take the warp kernel
        add(x, addend, rows * width, stream);
        rms_norm(x, rows, width, w, w_type, width, eps, y, stream);
        return;
    }
    const auto blocks = static_cast<unsigned>(rows);
    switch (w_type) {
        case GgmlType::F32:
            rms_norm_block_kernel<GgmlType::F32, true>
                <<<blocks, kThreads, 0, stream>>>(x, width, w, eps, y, x, addend);
            break;
        case GgmlType::F16:
            rms_norm_block_kernel<GgmlType::F16, true>
                <<<blocks, kThreads, 0, stream>>>(x, width, w, eps, y, x, addend);
            break;
        default:
            rms_norm_block_kernel<GgmlType::BF16, true>
                <<<blocks, kThreads, 0, stream>>>(x, width, w, eps, y, x, addend);
            break;
    }
    FLUORO_CHECK_LAUNCH(rms_norm_block_kernel);
}

void rms_norm(const float* x, int64_t rows, int64_t width, const void* w, GgmlType w_type,
              int64_t group, float eps, float* y, cudaStream_t stream) {
    if (rows < 0 || width < 0 || group <= 0 || width % group != 0)
        throw Error("CUDA rms_norm: group " + str(group) + " does not divide rows x width " +
                    str(rows) + " x " + str(width));
    check_16bit_or_f32("rms_norm", "weight", w_type);
    const int64_t n_groups = rows * (width / group);
    if (n_groups == 0) return;
    switch (w_type) {
        case GgmlType::F32:
            launch_rms_norm<GgmlType::F32>(x, n_groups, group, w, eps, y, stream);
            break;
        case GgmlType::F16:
            launch_rms_norm<GgmlType::F16>(x, n_groups, group, w, eps, y, stream);
            break;
        default:
            launch_rms_norm<GgmlType::BF16>(x, n_groups, group, w, eps, y, stream);
            break;
    }
}

RopeArgs plain_rope(int64_t n_rot, float freq_base, float freq_scale, bool neox) {
    RopeParams p;
    p.n_rot = n_rot;
    p.freq_base = freq_base;
    p.freq_scale = freq_scale;
    RopeArgs a;
    a.n_rot = n_rot;
    if (n_rot > 0) a.coeffs = rope_coeffs(p);
    a.neox = neox;
    return a;
}

void rope_pair(float* q, int64_t n_head_q, float* k, int64_t n_head_k, int64_t rows,
               int64_t head_dim, const RopeArgs& a, const int32_t* pos, cudaStream_t stream) {
    check_rope_shape("rope", n_head_q, head_dim, a.n_rot);
    check_rope_shape("rope", n_head_k, head_dim, a.n_rot);
    if (rows < 0) throw Error("CUDA rope: negative row count " + str(rows));
    if (rows == 0 || a.n_rot == 0) return;
    const int64_t half = a.n_rot / 2;
    const auto smem = static_cast<size_t>(2 * half) * sizeof(float);
    rope_kernel<<<dim3(static_cast<unsigned>(rows), 2), kThreads, smem, stream>>>(
        q, n_head_q, head_dim, half, a.neox, a.coeffs, a.factors, pos, k, n_head_k);
    FLUORO_CHECK_LAUNCH(rope_kernel);
}

void rope(float* x, int64_t rows, int64_t n_head, int64_t head_dim, const RopeArgs& a,
          const int32_t* pos, cudaStream_t stream) {
    check_rope_shape("rope", n_head, head_dim, a.n_rot);
    if (rows < 0) throw Error("CUDA rope: negative row count " + str(rows));
    if (rows == 0 || a.n_rot == 0) return;
    const int64_t half = a.n_rot / 2;
    const auto smem = static_cast<size_t>(2 * half) * sizeof(float);
    rope_kernel<<<static_cast<unsigned>(rows), kThreads, smem, stream>>>(
        x, n_head, head_dim, half, a.neox, a.coeffs, a.factors, pos);
    FLUORO_CHECK_LAUNCH(rope_kernel);
}

void rope_shift_kv(const KvLayerDev& layer, int64_t n_head_kv, int64_t head_dim, const RopeArgs& a,
                   const int32_t* rows, const int32_t* deltas, int64_t n, cudaStream_t stream) {
    check_rope_shape("rope_shift_kv", n_head_kv, head_dim, a.n_rot);
    check_count("rope_shift_kv", n);
    const size_t elem_bytes = layer.elem == KvElem::F16 ? sizeof(__half) : sizeof(float);
    const size_t used = static_cast<size_t>(n_head_kv * head_dim) * elem_bytes;
    if (layer.k_row_bytes < used || layer.k_row_bytes % elem_bytes != 0)
        throw Error("CUDA rope_shift_kv: K row of " + std::to_string(layer.k_row_bytes) +
                    " bytes cannot hold " + str(n_head_kv) + " heads x " + str(head_dim) +
                    " elements of " + std::to_string(elem_bytes) + " bytes");
    if (n == 0 || a.n_rot == 0) return;
    const int64_t half = a.n_rot / 2;
    const auto smem = static_cast<size_t>(2 * half) * sizeof(float);
    if (layer.elem == KvElem::F16) {
        rope_shift_kv_kernel<__half><<<static_cast<unsigned>(n), kThreads, smem, stream>>>(
            layer.k, layer.k_row_bytes, n_head_kv, head_dim, half, a.neox, a.coeffs, a.factors,
            rows, deltas);
        FLUORO_CHECK_LAUNCH(rope_shift_kv_kernel<__half>);
    } else {
        rope_shift_kv_kernel<float><<<static_cast<unsigned>(n), kThreads, smem, stream>>>(
            layer.k, layer.k_row_bytes, n_head_kv, head_dim, half, a.neox, a.coeffs, a.factors,
            rows, deltas);
        FLUORO_CHECK_LAUNCH(rope_shift_kv_kernel<float>);
    }
}

void add(float* x, const float* y, int64_t n, cudaStream_t stream) {
    check_count("add", n);
    if (n == 0) return;
    add_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, y, n);
    FLUORO_CHECK_LAUNCH(add_kernel);
}

void scale(float* x, float s, int64_t n, cudaStream_t stream) {
    check_count("scale", n);
    if (n == 0) return;
    scale_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, s, n);
    FLUORO_CHECK_LAUNCH(scale_kernel);
}

void add_bias(float* y, int64_t rows, int64_t width, const void* bias, GgmlType bias_type,
              cudaStream_t stream) {
    if (rows < 0 || width < 0)
        throw Error("CUDA add_bias: invalid shape " + str(rows) + " x " + str(width));
    check_16bit_or_f32("add_bias", "bias", bias_type);
    const int64_t n = rows * width;
    if (n == 0) return;
    switch (bias_type) {
        case GgmlType::F32:
            add_bias_kernel<GgmlType::F32><<<grid_for(n), kThreads, 0, stream>>>(y, width, bias, n);
            break;
        case GgmlType::F16:
            add_bias_kernel<GgmlType::F16><<<grid_for(n), kThreads, 0, stream>>>(y, width, bias, n);
            break;
        default:
            add_bias_kernel<GgmlType::BF16>
                <<<grid_for(n), kThreads, 0, stream>>>(y, width, bias, n);
            break;
    }
    FLUORO_CHECK_LAUNCH(add_bias_kernel);
}

void swiglu(float* gate, const float* up, int64_t n, cudaStream_t stream) {
    check_count("swiglu", n);
    if (n == 0) return;
    swiglu_kernel<<<grid_for(n), kThreads, 0, stream>>>(gate, up, n);
    FLUORO_CHECK_LAUNCH(swiglu_kernel);
}

void swiglu_oai(float* gate, const float* up, float alpha, float limit, int64_t n,
                cudaStream_t stream) {
    check_count("swiglu_oai", n);
    if (n == 0) return;
    swiglu_oai_kernel<<<grid_for(n), kThreads, 0, stream>>>(gate, up, alpha, limit, n);
    FLUORO_CHECK_LAUNCH(swiglu_oai_kernel);
}

void copy_blocks(const float* x, int64_t x_width, float* y, int64_t y_width, int64_t rows,
                 int64_t width, int64_t n_blocks, int64_t x_offset, int64_t x_stride,
                 int64_t y_offset, int64_t y_stride, cudaStream_t stream) {
    const int64_t total = rows * n_blocks * width;
    if (total <= 0) return;
    copy_blocks_kernel<<<grid_for(total), kThreads, 0, stream>>>(
        x, x_width, y, y_width, width, n_blocks, x_offset, x_stride, y_offset, y_stride, total);
    FLUORO_CHECK_LAUNCH(copy_blocks_kernel);
}

void apply_sinks(float* out, float* lse, const float* sinks, int64_t n_tok, int64_t n_head,
                 int64_t head_dim_v, cudaStream_t stream) {
    const int64_t rows = n_tok * n_head;
    check_count("apply_sinks", rows * head_dim_v);
    if (rows == 0) return;
    apply_sinks_kernel<<<grid_for(rows), kThreads, 0, stream>>>(out, lse, sinks, rows, n_head,
                                                                head_dim_v);
    FLUORO_CHECK_LAUNCH(apply_sinks_kernel);
}

void geglu_tanh(float* gate, const float* up, int64_t n, cudaStream_t stream) {
    check_count("geglu_tanh", n);
    if (n == 0) return;
    geglu_tanh_kernel<<<grid_for(n), kThreads, 0, stream>>>(gate, up, n);
    FLUORO_CHECK_LAUNCH(geglu_tanh_kernel);
}

void softcap(float* x, float cap, int64_t n, cudaStream_t stream) {
    check_count("softcap", n);
    if (!(cap > 0.0f))
        throw Error("CUDA softcap: cap " + std::to_string(cap) + " must be positive");
    if (n == 0) return;
    softcap_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, cap, n);
    FLUORO_CHECK_LAUNCH(softcap_kernel);
}

void gather_rows(const float* x, int64_t width, const int32_t* rows, int64_t n, float* y,
                 cudaStream_t stream) {
    if (width < 0 || n < 0)
        throw Error("CUDA gather_rows: invalid shape " + str(n) + " x " + str(width));
    const int64_t total = n * width;
    if (total == 0) return;
    gather_rows_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, width, rows, total, y);
    FLUORO_CHECK_LAUNCH(gather_rows_kernel);
}

}  // namespace fluoro::cuda
