// Quantized matrix products (see cuda_matmul.h).
//
// GEMV (decode): a warp owns kRows consecutive output rows. Each ggml block is split into
// kParts "parts" of kE elements; lane L handles part L % kParts of block (it * 32 / kParts +
// L / kParts), so adjacent lanes read adjacent bytes of the same block and one warp-wide load
// instruction touches one or two cache lines. A part is dequantized to f32 in registers (integer
// nibbles/bytes become floats with the 2^23 magic-number trick, no int->float conversion unit),
// and each x value loaded (float2/float4, through L1) is used for all kRows rows and, per token,
// for every row. f32 FMA accumulation, then a warp-shuffle reduction.
//
// GEMM (prefill): the weight is dequantized into an F16 scratch (in chunks of at most
// kMaxChunkElems elements), x is converted to F16, and cublasGemmEx runs with f32 compute and
// f32 output. BF16 weights are dequantized to F32 instead (BF16's range exceeds F16's) and F32
// weights go straight to cublasSgemm.
//
// The per-type block decoders (a GEMV part in registers, and the exact per-element elem() that
// get_rows and the GEMM dequantizer share) are in quant_blocks.cuh.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_matmul.h"
#include "backend/cuda/gemm.h"
#include "backend/cuda/quant_blocks.cuh"
#include "core/error.h"

namespace fluoro::cuda {

namespace {

using namespace quant;

// ---------------------------------------------------------------------------------------------
// GEMV kernels.

constexpr int kWarpsPerCta = 4;
constexpr int kGemvThreads = 32 * kWarpsPerCta;

template <int kN>
__device__ __forceinline__ void load_run(const float* x, float* dst) {
    if constexpr (kN % 4 == 0) {
#pragma unroll
        for (int i = 0; i < kN; i += 4) {
            const float4 v = __ldg(reinterpret_cast<const float4*>(x + i));
            dst[i] = v.x;
            dst[i + 1] = v.y;
            dst[i + 2] = v.z;
            dst[i + 3] = v.w;
        }
    } else {
        static_assert(kN % 2 == 0, "runs are float2 or float4 multiples");
#pragma unroll
        for (int i = 0; i < kN; i += 2) {
            const float2 v = __ldg(reinterpret_cast<const float2*>(x + i));
            dst[i] = v.x;
            dst[i + 1] = v.y;
        }
    }
}

// Warp-wide sum, result in every lane.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, off);
    return v;
}

// Up to kMaxOutputs weights of one type multiplied by the same x in one launch: output j owns
// warps [warp_end[j - 1], warp_end[j]) of the grid.
constexpr int kMaxOutputs = 4;
struct GemvOutputs {
    const uint8_t* w[kMaxOutputs];
    size_t row_bytes[kMaxOutputs];
    int64_t n_out[kMaxOutputs];
    float* y[kMaxOutputs];
    int64_t warp_end[kMaxOutputs];
    int n;
};

// y[t * n_out + o] for t < n_tok (<= kTok) and the warp's kRows rows o of its output. Rows past
// n_out are computed on row n_out - 1 (no divergence) and not stored.
template <class Q, int kTok, int kRows>
__global__ void __launch_bounds__(kGemvThreads)
    gemv_quant_kernel(const GemvOutputs outs, int64_t n_in, const float* __restrict__ x,
                      int n_tok) {
    const int lane = threadIdx.x & 31;
    int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerCta + (threadIdx.x >> 5);
    int j = 0;
    while (j + 1 < outs.n && warp >= outs.warp_end[j]) ++j;
    if (j > 0) warp -= outs.warp_end[j - 1];
    const uint8_t* __restrict__ w = outs.w[j];
    const size_t row_bytes = outs.row_bytes[j];
    const int64_t n_out = outs.n_out[j];
    float* __restrict__ y = outs.y[j];
    const int64_t row0 = warp * kRows;
    if (row0 >= n_out) return;  // whole warp leaves together

    const uint8_t* rows[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        const int64_t row = row0 + r < n_out ? row0 + r : n_out - 1;
        rows[r] = w + static_cast<size_t>(row) * row_bytes;
    }

    float acc[kRows][kTok];
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int t = 0; t < kTok; ++t) acc[r][t] = 0.0f;

    constexpr int kBlocksPerIter = 32 / Q::kParts;
    const int part = lane % Q::kParts;
    const int64_t n_blocks = n_in / Q::kElems;
    for (int64_t blk = lane / Q::kParts; blk < n_blocks; blk += kBlocksPerIter) {
        float wv[kRows][Q::kE];
#pragma unroll
        for (int r = 0; r < kRows; ++r) Q::part(rows[r] + blk * Q::kBytes, part, wv[r]);

        const float* xb = x + blk * Q::kElems;
#pragma unroll
        for (int t = 0; t < kTok; ++t) {
            if (t < n_tok) {
                float xv[Q::kE];
#pragma unroll
                for (int run = 0; run < Q::kRuns; ++run) {
                    load_run<Q::kRunLen>(xb + t * n_in + Q::run_start(part, run),
                                         xv + run * Q::kRunLen);
                }
#pragma unroll
                for (int r = 0; r < kRows; ++r)
#pragma unroll
                    for (int e = 0; e < Q::kE; ++e) acc[r][t] = fmaf(wv[r][e], xv[e], acc[r][t]);
            }
        }
    }

#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
        for (int t = 0; t < kTok; ++t) {
            const float s = warp_sum(acc[r][t]);
            if (lane == 0 && t < n_tok && row0 + r < n_out) y[t * n_out + row0 + r] = s;
        }
    }
}

// Plain float weights (any n_in, any alignment of the element type): lanes stride the row.
template <class Q, int kTok, int kRows>
__global__ void __launch_bounds__(kGemvThreads)
    gemv_float_kernel(const uint8_t* __restrict__ w, size_t row_bytes, int64_t n_in, int64_t n_out,
                      const float* __restrict__ x, int n_tok, float* __restrict__ y) {
    const int lane = threadIdx.x & 31;
    const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerCta + (threadIdx.x >> 5);
    const int64_t row0 = warp * kRows;
    if (row0 >= n_out) return;

    const uint8_t* rows[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        const int64_t row = row0 + r < n_out ? row0 + r : n_out - 1;
        rows[r] = w + static_cast<size_t>(row) * row_bytes;
    }
    float acc[kRows][kTok];
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int t = 0; t < kTok; ++t) acc[r][t] = 0.0f;

    for (int64_t i = lane; i < n_in; i += 32) {
        float wv[kRows];
#pragma unroll
        for (int r = 0; r < kRows; ++r) wv[r] = Q::elem(rows[r] + i * Q::kBytes, 0);
#pragma unroll
        for (int t = 0; t < kTok; ++t) {
            if (t < n_tok) {
                const float xv = __ldg(x + t * n_in + i);
#pragma unroll
                for (int r = 0; r < kRows; ++r) acc[r][t] = fmaf(wv[r], xv, acc[r][t]);
            }
        }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
        for (int t = 0; t < kTok; ++t) {
            const float s = warp_sum(acc[r][t]);
            if (lane == 0 && t < n_tok && row0 + r < n_out) y[t * n_out + row0 + r] = s;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Row dequantization (get_rows, and the GEMM's weight conversion): one thread per element.
// Output row i is table row ids[i] (ids == nullptr: row row0 + i); ids out of range give zeros.

template <class OutT>
__device__ __forceinline__ OutT from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
    return v;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
    return __float2half_rn(v);
}

// Rows stride over blockIdx.y, elements of a row over x (no 64-bit division per element).
template <class Q, class OutT>
__global__ void dequant_rows_kernel(const uint8_t* __restrict__ table, size_t row_bytes,
                                    int64_t row_len, int64_t n_rows_table,
                                    const int32_t* __restrict__ ids, int64_t row0, int64_t n,
                                    OutT* __restrict__ out) {
    const int64_t j_stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const int64_t j_begin = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (int64_t i = blockIdx.y; i < n; i += gridDim.y) {
        const int64_t row = ids != nullptr ? static_cast<int64_t>(ids[i]) : row0 + i;
        const bool valid = row >= 0 && row < n_rows_table;
        const uint8_t* src = table + (valid ? static_cast<size_t>(row) * row_bytes : 0);
        OutT* dst = out + i * row_len;
        for (int64_t j = j_begin; j < row_len; j += j_stride) {
            float v = 0.0f;
            if (valid) {
                v = Q::elem(src + static_cast<size_t>(j / Q::kElems) * Q::kBytes,
                            static_cast<int>(j % Q::kElems));
            }
            dst[j] = from_float<OutT>(v);
        }
    }
}

__global__ void f32_to_f16_kernel(const float* __restrict__ src, __half* __restrict__ dst,
                                  int64_t n) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride)
        dst[i] = __float2half_rn(src[i]);
}

unsigned grid_for(int64_t n, int threads) {
    const int64_t blocks = (n + threads - 1) / threads;
    return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, 132 * 64));
}

template <class Q, int kTok, int kRows>
void launch_gemv_rows(const uint8_t* w, size_t row_bytes, int64_t n_in, int64_t n_out,
                      const float* x, int n_tok, float* y, cudaStream_t stream) {
    constexpr int64_t kRowsPerCta = static_cast<int64_t>(kRows) * kWarpsPerCta;
    const int64_t ctas = (n_out + kRowsPerCta - 1) / kRowsPerCta;
    if (ctas > INT_MAX) throw Error("CUDA matmul: n_out " + std::to_string(n_out) + " too large");
    if constexpr (kIsFloat<Q>) {
        gemv_float_kernel<Q, kTok, kRows><<<static_cast<unsigned>(ctas), kGemvThreads, 0, stream>>>(
            w, row_bytes, n_in, n_out, x, n_tok, y);
    } else {
        GemvOutputs o{};
        o.w[0] = w;
        o.row_bytes[0] = row_bytes;
        o.n_out[0] = n_out;
        o.y[0] = y;
        o.warp_end[0] = ctas * kWarpsPerCta;
        o.n = 1;
        gemv_quant_kernel<Q, kTok, kRows>
            <<<static_cast<unsigned>(ctas), kGemvThreads, 0, stream>>>(o, n_in, x, n_tok);
    }
    FLUORO_CUDA_CHECK(cudaGetLastError());
}

// One launch for several outputs of one quantized type, one row per warp.
template <class Q, int kTok>
void launch_gemv_outputs(GemvOutputs o, int64_t n_in, const float* x, int n_tok,
                         cudaStream_t stream) {
    const int64_t ctas = (o.warp_end[o.n - 1] + kWarpsPerCta - 1) / kWarpsPerCta;
    gemv_quant_kernel<Q, kTok, 1>
        <<<static_cast<unsigned>(ctas), kGemvThreads, 0, stream>>>(o, n_in, x, n_tok);
    FLUORO_CUDA_CHECK(cudaGetLastError());
}

// Rows per warp: several (each x load serves them all) when there are rows enough to fill the
// device; one row per warp for the small matrices of 135M-270M models (576 rows at 4 rows per
// warp made 36 blocks for 132 SMs: 6 us for 0.2 MB, measured on an H200).
constexpr int64_t kManyRows = 8192;

template <class Q, int kTok>
void launch_gemv_tok(const uint8_t* w, size_t row_bytes, int64_t n_in, int64_t n_out,
                     const float* x, int n_tok, float* y, cudaStream_t stream) {
    if (n_out < kManyRows)
        return launch_gemv_rows<Q, kTok, 1>(w, row_bytes, n_in, n_out, x, n_tok, y, stream);
    launch_gemv_rows<Q, kTok, (kTok <= 2 ? 4 : 2)>(w, row_bytes, n_in, n_out, x, n_tok, y, stream);
}

template <class Q>
void launch_gemv(const uint8_t* w, size_t row_bytes, int64_t n_in, int64_t n_out, const float* x,
                 int n_tok, float* y, cudaStream_t stream) {
    if (n_tok == 1) return launch_gemv_tok<Q, 1>(w, row_bytes, n_in, n_out, x, n_tok, y, stream);
    if (n_tok == 2) return launch_gemv_tok<Q, 2>(w, row_bytes, n_in, n_out, x, n_tok, y, stream);
    if (n_tok <= 4) return launch_gemv_tok<Q, 4>(w, row_bytes, n_in, n_out, x, n_tok, y, stream);
    launch_gemv_tok<Q, 8>(w, row_bytes, n_in, n_out, x, n_tok, y, stream);
}

template <class Q, class OutT>
void launch_dequant_rows(const void* table, size_t row_bytes, int64_t row_len, int64_t n_rows_table,
                         const int32_t* ids, int64_t row0, int64_t n, OutT* out,
                         cudaStream_t stream) {
    constexpr int kThreads = 256;
    const dim3 grid(
        static_cast<unsigned>(std::clamp<int64_t>((row_len + kThreads - 1) / kThreads, 1, 64)),
        static_cast<unsigned>(std::clamp<int64_t>(n, 1, 65535)));
    dequant_rows_kernel<Q, OutT><<<grid, kThreads, 0, stream>>>(
        static_cast<const uint8_t*>(table), row_bytes, row_len, n_rows_table, ids, row0, n, out);
    FLUORO_CUDA_CHECK(cudaGetLastError());
}

std::string shape_text(GgmlType type, int64_t n_out, int64_t n_in, int64_t n_tok,
                       size_t row_bytes) {
    return std::string(type_name(type)) + " weight [" + std::to_string(n_out) + " x " +
           std::to_string(n_in) + "], row_bytes " + std::to_string(row_bytes) + ", n_tok " +
           std::to_string(n_tok);
}

int gemv_align(GgmlType type) {
    int align = 1;
    dispatch_type(type, [&](auto q) {
        using Q = decltype(q);
        if constexpr (kIsFloat<Q>) {
            align = Q::kBytes;
        } else {
            align = Q::kAlign;
        }
    });
    return align;
}

// Bytes of a row of n elements (0 when n is not a whole number of blocks).
size_t row_bytes_or_zero(GgmlType type, int64_t n) {
    if (n < 0) return 0;
    const auto b = row_bytes(type, static_cast<uint64_t>(n));
    return b ? static_cast<size_t>(*b) : 0;
}

// Checks shared by every entry point; false when there is nothing to compute.
bool check_args(const char* what, GgmlType type, const void* d_w, size_t row_bytes, int64_t n_in,
                int64_t n_out, const float* d_x, int64_t n_tok, float* d_y) {
    if (!can_matmul(type)) {
        throw UnsupportedError(std::string("CUDA ") + what + ": tensor type " +
                               std::string(type_name(type)) +
                               " is not supported (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, "
                               "Q4_K, Q5_K, Q6_K)");
    }
    const TypeTraits& tr = type_traits(type);
    const auto shape = [&] { return shape_text(type, n_out, n_in, n_tok, row_bytes); };
    if (n_in < 0 || n_out < 0 || n_tok < 0 || n_in % tr.block_elems != 0) {
        throw Error(std::string("CUDA ") + what + ": bad shape " + shape() +
                    " (n_in must be a non-negative multiple of the block size " +
                    std::to_string(tr.block_elems) + ")");
    }
    const auto need = row_bytes_or_zero(type, n_in);
    if (row_bytes < need) {
        throw Error(std::string("CUDA ") + what + ": " + shape() + ": row_bytes is smaller than " +
                    std::to_string(need) + " bytes of a row");
    }
    if (n_out == 0 || n_tok == 0) return false;
    if (d_y == nullptr || (n_in != 0 && (d_w == nullptr || d_x == nullptr))) {
        throw Error(std::string("CUDA ") + what + ": null device pointer for " + shape());
    }
    const auto align = static_cast<uintptr_t>(gemv_align(type));
    if (reinterpret_cast<uintptr_t>(d_w) % align != 0 || row_bytes % align != 0) {
        throw Error(std::string("CUDA ") + what + ": " + shape() +
                    ": weight pointer or row_bytes " + "not " + std::to_string(align) +
                    "-byte aligned");
    }
    if (reinterpret_cast<uintptr_t>(d_x) % 16 != 0 && tr.block_elems > 1) {
        throw Error(std::string("CUDA ") + what + ": " + shape() + ": x not 16-byte aligned");
    }
    return true;
}

}  // namespace

bool can_matmul(GgmlType type) {
    switch (type) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16:
        case GgmlType::Q4_0:
        case GgmlType::Q4_1:
        case GgmlType::Q5_0:
        case GgmlType::Q5_1:
        case GgmlType::Q8_0:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K:
        case GgmlType::MXFP4:
        case GgmlType::IQ4_XS:
            return true;
        default:
            return false;
    }
}

// ---------------------------------------------------------------------------------------------

namespace {
// Largest weight chunk the GEMM path dequantizes at once (elements).
constexpr int64_t kMaxChunkElems = int64_t{64} << 20;
constexpr size_t kScratchAlign = 256;

size_t round_up(size_t v) {
    return (v + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
}
}  // namespace

struct Matmul::Impl {
    cudaStream_t stream = nullptr;
    CublasHandle cublas;
    void* scratch = nullptr;
    size_t scratch_size = 0;

    explicit Impl(cudaStream_t s) : stream(s) {}
    ~Impl() {
        if (scratch != nullptr) {
            cudaStreamSynchronize(stream);
            cudaFree(scratch);
        }
    }

    void ensure(size_t bytes) {
        if (bytes <= scratch_size) return;
        if (scratch != nullptr) {
            // Work queued on the stream may still read the old buffer.
            FLUORO_CUDA_CHECK(cudaStreamSynchronize(stream));
            FLUORO_CUDA_CHECK(cudaFree(scratch));
            scratch = nullptr;
            scratch_size = 0;
        }
        FLUORO_CUDA_CHECK(cudaMalloc(&scratch, bytes));
        scratch_size = bytes;
    }
};

// Rows of a chunk and scratch layout of the GEMM path for one call.
namespace {
struct GemmPlan {
    size_t out_elem = 2;     // bytes per dequantized weight element (F16, or F32 for BF16)
    int64_t chunk_rows = 0;  // rows dequantized per chunk
    size_t w_bytes = 0;      // weight part of the scratch
    size_t x_bytes = 0;      // F16 x (0 when x is used as f32)
};

GemmPlan plan_gemm(GgmlType type, int64_t n_in, int64_t n_out, int64_t n_tok) {
    GemmPlan p;
    if (type == GgmlType::F32) return p;  // straight to cublasSgemm
    p.out_elem = type == GgmlType::BF16 ? 4 : 2;
    const int64_t max_chunk = type == GgmlType::BF16 ? kMaxChunkElems / 2 : kMaxChunkElems;
    p.chunk_rows = std::clamp<int64_t>(max_chunk / std::max<int64_t>(n_in, 1), 1, n_out);
    p.w_bytes =
        round_up(static_cast<size_t>(p.chunk_rows) * static_cast<size_t>(n_in) * p.out_elem);
    if (type != GgmlType::BF16) {
        p.x_bytes = round_up(static_cast<size_t>(n_tok) * static_cast<size_t>(n_in) * 2);
    }
    return p;
}
}  // namespace

Matmul::Matmul(cudaStream_t stream) : impl_(std::make_unique<Impl>(stream)) {}
Matmul::~Matmul() = default;

void Matmul::reserve(int64_t max_tokens, int64_t max_in, int64_t max_weight_elems) {
    if (max_tokens <= 0 || max_in <= 0 || max_weight_elems <= 0) return;
    // A GEMM's F16 weight chunk holds at most max(kMaxChunkElems, n_in) elements (see
    // plan_gemm), and never more than the weight; x takes n_tok * n_in halves.
    const int64_t w_elems = std::min(max_weight_elems, std::max(kMaxChunkElems, max_in));
    impl_->ensure(round_up(static_cast<size_t>(w_elems) * 2) +
                  round_up(static_cast<size_t>(max_tokens) * static_cast<size_t>(max_in) * 2));
}

size_t Matmul::scratch_bytes() const {
    return impl_->scratch_size;
}

void Matmul::run(GgmlType type, const void* d_w, size_t row_bytes, int64_t n_in, int64_t n_out,
                 const float* d_x, int64_t n_tok, float* d_y) {
    if (n_tok <= kGemvMaxTokens) {
        run_gemv(type, d_w, row_bytes, n_in, n_out, d_x, n_tok, d_y);
    } else {
        run_gemm(type, d_w, row_bytes, n_in, n_out, d_x, n_tok, d_y);
    }
}

void Matmul::run_many(std::span<const Output> outs, int64_t n_in, const float* d_x, int64_t n_tok) {
    size_t i = 0;
    while (i < outs.size()) {
        // The longest run from i of the same quantized type, each small enough for one row per
        // warp (launch_gemv_tok's choice for it alone too, so results are the same).
        size_t e = i;
        const bool fusable = n_tok > 0 && n_tok <= kGemvMaxTokens && n_in > 0 &&
                             type_traits(outs[i].type).block_elems > 1;
        while (e < outs.size() && e - i < size_t(kMaxOutputs) && fusable &&
               outs[e].type == outs[i].type && outs[e].n_out > 0 && outs[e].n_out < kManyRows &&
               check_args("matmul (GEMV)", outs[e].type, outs[e].d_w, outs[e].row_bytes, n_in,
                          outs[e].n_out, d_x, n_tok, outs[e].d_y))
            ++e;
        if (e - i < 2) {
            const Output& o = outs[i];
            run(o.type, o.d_w, o.row_bytes, n_in, o.n_out, d_x, n_tok, o.d_y);
            ++i;
            continue;
        }
        GemvOutputs g{};
        int64_t warps = 0;
        for (size_t k = i; k < e; ++k) {
            const int j = int(k - i);
            g.w[j] = static_cast<const uint8_t*>(outs[k].d_w);
            g.row_bytes[j] = outs[k].row_bytes;
            g.n_out[j] = outs[k].n_out;
            g.y[j] = outs[k].d_y;
            warps += outs[k].n_out;  // one row per warp
            g.warp_end[j] = warps;
        }
        g.n = int(e - i);
        dispatch_type(outs[i].type, [&](auto q) {
            using Q = decltype(q);
            if constexpr (!kIsFloat<Q>) {
                const int nt = int(n_tok);
                if (nt == 1)
                    launch_gemv_outputs<Q, 1>(g, n_in, d_x, nt, impl_->stream);
                else if (nt == 2)
                    launch_gemv_outputs<Q, 2>(g, n_in, d_x, nt, impl_->stream);
                else if (nt <= 4)
                    launch_gemv_outputs<Q, 4>(g, n_in, d_x, nt, impl_->stream);
                else
                    launch_gemv_outputs<Q, 8>(g, n_in, d_x, nt, impl_->stream);
            }
        });
        i = e;
    }
}

void Matmul::run_gemv(GgmlType type, const void* d_w, size_t row_bytes, int64_t n_in, int64_t n_out,
                      const float* d_x, int64_t n_tok, float* d_y) {
    if (!check_args("matmul (GEMV)", type, d_w, row_bytes, n_in, n_out, d_x, n_tok, d_y)) return;
    cudaStream_t stream = impl_->stream;
    if (n_in == 0) {
        FLUORO_CUDA_CHECK(cudaMemsetAsync(
            d_y, 0, static_cast<size_t>(n_tok) * static_cast<size_t>(n_out) * sizeof(float),
            stream));
        return;
    }
    const auto* w = static_cast<const uint8_t*>(d_w);
    dispatch_type(type, [&](auto q) {
        using Q = decltype(q);
        for (int64_t t0 = 0; t0 < n_tok; t0 += kGemvMaxTokens) {
            const int nt = static_cast<int>(std::min<int64_t>(kGemvMaxTokens, n_tok - t0));
            launch_gemv<Q>(w, row_bytes, n_in, n_out, d_x + t0 * n_in, nt, d_y + t0 * n_out,
                           stream);
        }
    });
}

void Matmul::run_gemm(GgmlType type, const void* d_w, size_t row_bytes, int64_t n_in, int64_t n_out,
                      const float* d_x, int64_t n_tok, float* d_y) {
    if (!check_args("matmul (GEMM)", type, d_w, row_bytes, n_in, n_out, d_x, n_tok, d_y)) return;
    cudaStream_t stream = impl_->stream;
    if (n_in > INT_MAX || n_out > INT_MAX || n_tok > INT_MAX) {
        throw Error("CUDA matmul (GEMM): " + shape_text(type, n_out, n_in, n_tok, row_bytes) +
                    " exceeds cuBLAS' int dimensions");
    }
    if (n_in == 0) {
        FLUORO_CUDA_CHECK(cudaMemsetAsync(
            d_y, 0, static_cast<size_t>(n_tok) * static_cast<size_t>(n_out) * sizeof(float),
            stream));
        return;
    }
    cublasHandle_t handle = impl_->cublas.get();
    if (type == GgmlType::F32 && row_bytes == static_cast<size_t>(n_in) * 4) {
        gemm_f32(handle, d_x, static_cast<const float*>(d_w), d_y, n_tok, n_in, n_out, stream);
        return;
    }
    GemmPlan plan = plan_gemm(type == GgmlType::F32 ? GgmlType::BF16 : type, n_in, n_out, n_tok);
    const bool f32_path = type == GgmlType::F32 || type == GgmlType::BF16;
    // An existing (reserved) scratch that holds x and at least 256 weight rows is used as it is,
    // in smaller chunks if need be (BF16 weights, whose chunks are F32); otherwise it grows.
    const size_t min_bytes =
        plan.x_bytes + round_up(static_cast<size_t>(std::min<int64_t>(plan.chunk_rows, 256)) *
                                static_cast<size_t>(n_in) * plan.out_elem);
    if (impl_->scratch_size < min_bytes) impl_->ensure(plan.w_bytes + plan.x_bytes);
    auto* scratch = static_cast<uint8_t*>(impl_->scratch);
    // ensure() may have been satisfied by a larger earlier reservation; use all of it for W.
    const size_t w_space = impl_->scratch_size - plan.x_bytes;
    plan.chunk_rows = std::clamp<int64_t>(
        static_cast<int64_t>(w_space / (static_cast<size_t>(n_in) * plan.out_elem)), 1, n_out);

    FLUORO_CUBLAS_CHECK(cublasSetStream(handle, stream));
    const int k = static_cast<int>(n_in);
    const int n = static_cast<int>(n_tok);
    const float alpha = 1.0f;
    const float beta = 0.0f;
    __half* x16 = nullptr;
    if (!f32_path) {
        x16 = reinterpret_cast<__half*>(scratch + w_space);
        const int64_t nx = n_tok * n_in;
        f32_to_f16_kernel<<<grid_for(nx, 256), 256, 0, stream>>>(d_x, x16, nx);
        FLUORO_CUDA_CHECK(cudaGetLastError());
    }
    for (int64_t r0 = 0; r0 < n_out; r0 += plan.chunk_rows) {
        const int64_t rows = std::min<int64_t>(plan.chunk_rows, n_out - r0);
        const int m = static_cast<int>(rows);
        // Column-major view (see gemm.cpp): C = yᵀ [n_out, n_tok] with ldc = n_out; this chunk
        // is rows r0.. of C, i.e. C + r0. A = W chunk (row-major [rows, n_in]) with op T.
        if (f32_path) {
            auto* w32 = reinterpret_cast<float*>(scratch);
            dispatch_type(type, [&](auto q) {
                launch_dequant_rows<decltype(q), float>(d_w, row_bytes, n_in, n_out, nullptr, r0,
                                                        rows, w32, stream);
            });
            FLUORO_CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, w32,
                                            k, d_x, k, &beta, d_y + r0, static_cast<int>(n_out)));
        } else {
            auto* w16 = reinterpret_cast<__half*>(scratch);
            dispatch_type(type, [&](auto q) {
                launch_dequant_rows<decltype(q), __half>(d_w, row_bytes, n_in, n_out, nullptr, r0,
                                                         rows, w16, stream);
            });
            FLUORO_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, w16,
                                             CUDA_R_16F, k, x16, CUDA_R_16F, k, &beta, d_y + r0,
                                             CUDA_R_32F, static_cast<int>(n_out),
                                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        }
    }
}

void get_rows(GgmlType type, const void* d_table, size_t row_bytes, int64_t row_len,
              int64_t n_rows_table, const int32_t* d_ids, int64_t n, float* d_y,
              cudaStream_t stream) {
    if (!can_matmul(type)) {
        throw UnsupportedError("CUDA get_rows: tensor type " + std::string(type_name(type)) +
                               " is not supported");
    }
    const TypeTraits& tr = type_traits(type);
    if (row_len < 0 || n < 0 || n_rows_table < 0 || row_len % tr.block_elems != 0 ||
        row_bytes < row_bytes_or_zero(type, row_len)) {
        throw Error("CUDA get_rows: bad shape: " + std::string(type_name(type)) + " table [" +
                    std::to_string(n_rows_table) + " x " + std::to_string(row_len) +
                    "], row_bytes " + std::to_string(row_bytes) + ", " + std::to_string(n) +
                    " ids (row length must be a multiple of " + std::to_string(tr.block_elems) +
                    ")");
    }
    if (n == 0 || row_len == 0) return;
    if (d_y == nullptr || d_ids == nullptr || (n_rows_table > 0 && d_table == nullptr)) {
        throw Error("CUDA get_rows: null device pointer");
    }
    dispatch_type(type, [&](auto q) {
        launch_dequant_rows<decltype(q), float>(d_table, row_bytes, row_len, n_rows_table, d_ids, 0,
                                                n, d_y, stream);
    });
}

}  // namespace fluoro::cuda
