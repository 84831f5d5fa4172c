// Dequantize kernels: one thread per output element. A warp covers exactly one 32-element block,
// so the block's scale is one broadcast load and the f32 stores are fully coalesced.
#include "backend/cuda/dequantize.h"

#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kernel_image.h"
#include "core/error.h"

namespace fluoro::cuda {

namespace {

// ggml block layouts (ggml-common.h); the structs are only 2-byte aligned, as on disk.
constexpr int kBlockElems = 32;

struct BlockQ8_0 {
    __half d;       // scale
    int8_t qs[32];  // x = qs * d
};
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block must match ggml's 34 bytes");

struct BlockQ4_1 {
    __half d;        // scale
    __half m;        // minimum
    uint8_t qs[16];  // element j: low nibble of qs[j]; element j + 16: high nibble
};
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 block must match ggml's 20 bytes");

// __fmul_rn / __fadd_rn are never contracted into an FMA (nvcc contracts a*b+c by default), so
// each result is the same correctly rounded multiply (and add) the CPU reference does.
__device__ inline float dequant(const BlockQ8_0& b, int j) {
    return __fmul_rn(static_cast<float>(b.qs[j]), __half2float(b.d));
}

__device__ inline float dequant(const BlockQ4_1& b, int j) {
    const uint8_t byte = b.qs[j & 15];
    const int q = j < 16 ? (byte & 0x0F) : (byte >> 4);
    return __fadd_rn(__fmul_rn(static_cast<float>(q), __half2float(b.d)), __half2float(b.m));
}

template <typename Block>
__global__ void dequantize_kernel(const Block* __restrict__ src, float* __restrict__ dst,
                                  int64_t n_elems) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n_elems;
         i += stride) {
        dst[i] = dequant(src[i / kBlockElems], static_cast<int>(i % kBlockElems));
    }
}

template <typename Block>
void launch(const void* d_src, float* d_dst, int64_t n_elems, cudaStream_t stream) {
    constexpr int kThreads = 256;
    // Grid-stride loop: cap the grid; 64K blocks of 256 threads fill any current GPU.
    const int64_t blocks = std::min<int64_t>((n_elems + kThreads - 1) / kThreads, 65535);
    dequantize_kernel<Block><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        static_cast<const Block*>(d_src), d_dst, n_elems);
    FLUORO_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

namespace detail {

cudaError_t kernel_image_status() {
    cudaFuncAttributes attr{};
    return cudaFuncGetAttributes(&attr, dequantize_kernel<BlockQ8_0>);
}

}  // namespace detail

bool can_dequantize(GgmlType type) {
    return type == GgmlType::Q8_0 || type == GgmlType::Q4_1;
}

void dequantize_rows(GgmlType type, const void* d_src, float* d_dst, int64_t n_rows,
                     int64_t row_len, cudaStream_t stream) {
    if (!can_dequantize(type)) {
        throw UnsupportedError("CUDA dequantize_rows: tensor type " + std::string(type_name(type)) +
                               " is not supported (Q8_0, Q4_1)");
    }
    if (n_rows < 0 || row_len < 0 || row_len % kBlockElems != 0) {
        throw Error("CUDA dequantize_rows: " + std::string(type_name(type)) + " shape [" +
                    std::to_string(n_rows) + ", " + std::to_string(row_len) +
                    "] is invalid (row length must be a non-negative multiple of 32)");
    }
    if (n_rows == 0 || row_len == 0) return;
    if (row_len > INT64_MAX / n_rows) {
        throw Error("CUDA dequantize_rows: shape [" + std::to_string(n_rows) + ", " +
                    std::to_string(row_len) + "] overflows");
    }
    if (d_src == nullptr || d_dst == nullptr) {
        throw Error("CUDA dequantize_rows: null device pointer");
    }
    // Rows are packed with no padding, so n_rows rows are one run of blocks.
    const int64_t n_elems = n_rows * row_len;
    if (type == GgmlType::Q8_0) {
        launch<BlockQ8_0>(d_src, d_dst, n_elems, stream);
    } else {
        launch<BlockQ4_1>(d_src, d_dst, n_elems, stream);
    }
}

}  // namespace fluoro::cuda
