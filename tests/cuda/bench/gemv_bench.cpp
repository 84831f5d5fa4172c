// GEMV / GEMM benchmark for the CUDA quantized matrix products (backend/cuda/cuda_matmul.h).
// Prints the device-to-device copy bandwidth, then for model-sized weights the decode GEMV time
// (n_tok = 1) with its weight-read bandwidth and its fraction of the copy bandwidth, then a few
// prefill GEMMs (n_tok = 512). Exit code 3 when there is no usable GPU.
//
// Bandwidth accounting: the copy moves B bytes read + B bytes written in time t and counts as
// 2B/t ("copy r+w"); a GEMV counts only the weight bytes it reads (x and y are tiny). The %copy
// column compares the two directly; the read-only share of the copy (B/t) is printed too.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_matmul.h"
#include "backend/cuda/device.h"
#include "core/error.h"
#include "tensor/ggml_type.h"

namespace {

using fluoro::GgmlType;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Median milliseconds of `reps` runs of f on `stream`, each timed with its own event pair.
// `flush` (may be null) is a buffer of flush_bytes written before each timed run, outside the
// timed interval, so the weights never start in L2 (50 MB on an H200).
template <class F>
double time_ms(cudaStream_t stream, int warmup, int reps, F&& f, void* flush = nullptr,
               size_t flush_bytes = 0) {
    for (int i = 0; i < warmup; ++i) f();
    cudaEvent_t start, stop;
    FLUORO_CUDA_CHECK(cudaEventCreate(&start));
    FLUORO_CUDA_CHECK(cudaEventCreate(&stop));
    std::vector<double> ms;
    for (int i = 0; i < reps; ++i) {
        if (flush != nullptr)
            FLUORO_CUDA_CHECK(cudaMemsetAsync(flush, i & 0xFF, flush_bytes, stream));
        FLUORO_CUDA_CHECK(cudaEventRecord(start, stream));
        f();
        FLUORO_CUDA_CHECK(cudaEventRecord(stop, stream));
        FLUORO_CUDA_CHECK(cudaEventSynchronize(stop));
        float t = 0.0f;
        FLUORO_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
        ms.push_back(t);
    }
    FLUORO_CUDA_CHECK(cudaEventDestroy(start));
    FLUORO_CUDA_CHECK(cudaEventDestroy(stop));
    return median(ms);
}

// Random bytes (xorshift) so no data-dependent shortcut flatters the numbers; fp16 fields may
// hold NaN/Inf, which costs the FMA units nothing.
void fill_random(void* d_ptr, size_t bytes) {
    std::vector<uint64_t> host((bytes + 7) / 8);
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (auto& v : host) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        v = s;
    }
    FLUORO_CUDA_CHECK(cudaMemcpy(d_ptr, host.data(), bytes, cudaMemcpyHostToDevice));
}

struct Shape {
    const char* model;
    int64_t n_out;
    int64_t n_in;
    GgmlType type;
};

size_t weight_bytes(const Shape& s) {
    const auto rb = fluoro::row_bytes(s.type, static_cast<uint64_t>(s.n_in));
    if (!rb)
        throw fluoro::Error(std::string("gemv_bench: ") + s.model + ": n_in " +
                            std::to_string(s.n_in) + " is no whole number of " +
                            std::string(fluoro::type_name(s.type)) + " blocks");
    return static_cast<size_t>(*rb) * static_cast<size_t>(s.n_out);
}

int run() {
    // Unbuffered, so that a crash still leaves the lines printed before it in a piped log.
    std::setvbuf(stdout, nullptr, _IONBF, 0);
    const auto t_begin = std::chrono::steady_clock::now();
    const fluoro::cuda::DeviceStatus status = fluoro::cuda::probe_devices();
    if (!status.available) {
        std::printf("gemv_bench: no CUDA device: %s\n", status.reason.c_str());
        return 3;
    }
    std::printf("device: %s (sm_%d%d, %.1f GiB)\n", status.name.c_str(), status.cc_major,
                status.cc_minor, static_cast<double>(status.total_mem) / (1 << 30));

    cudaStream_t stream;
    FLUORO_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    // Device-to-device copy of 1 GiB.
    double copy_gbps = 0.0;
    {
        const size_t bytes = size_t{1} << 30;
        void* src = nullptr;
        void* dst = nullptr;
        FLUORO_CUDA_CHECK(cudaMalloc(&src, bytes));
        FLUORO_CUDA_CHECK(cudaMalloc(&dst, bytes));
        FLUORO_CUDA_CHECK(cudaMemset(src, 1, bytes));
        const double ms = time_ms(stream, 2, 10, [&] {
            FLUORO_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
        });
        copy_gbps = 2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
        FLUORO_CUDA_CHECK(cudaFree(src));
        FLUORO_CUDA_CHECK(cudaFree(dst));
    }
    std::printf(
        "copy (1 GiB D2D, median of 10): %.0f GB/s counted read+write (%.0f GB/s "
        "read-only share); %%copy below = GEMV weight-read GB/s / %.0f\n\n",
        copy_gbps, copy_gbps / 2, copy_gbps);

    const std::vector<Shape> shapes = {
        {"SmolLM2 q/o", 576, 576, GgmlType::Q4_1},
        {"SmolLM2 k/v", 192, 576, GgmlType::Q4_1},
        {"SmolLM2 up", 1536, 576, GgmlType::Q4_1},
        {"SmolLM2 down", 576, 1536, GgmlType::Q4_1},
        {"SmolLM2 lm_head", 49152, 576, GgmlType::Q8_0},
        // Gemma 3 270M Q4_K_M's own types: n_in 640 is no multiple of 256, so the tensors read
        // by the hidden state are q5_0/q8_0 and only attn_output and ffn_down are k-quants.
        {"Gemma3 q", 1024, 640, GgmlType::Q5_0},
        {"Gemma3 k", 256, 640, GgmlType::Q5_0},
        {"Gemma3 v", 256, 640, GgmlType::Q8_0},
        {"Gemma3 o", 640, 1024, GgmlType::Q4_K},
        {"Gemma3 gate/up", 2048, 640, GgmlType::Q5_0},
        {"Gemma3 down", 640, 2048, GgmlType::Q6_K},
        {"Gemma3 lm_head", 262144, 640, GgmlType::Q8_0},
        {"big", 16384, 16384, GgmlType::Q4_K},
        {"big", 16384, 16384, GgmlType::Q8_0},
    };
    size_t max_w = 0;
    int64_t max_in = 0, max_out = 0;
    for (const Shape& s : shapes) {
        max_w = std::max(max_w, weight_bytes(s));
        max_in = std::max(max_in, s.n_in);
        max_out = std::max(max_out, s.n_out);
    }
    constexpr int64_t kGemmTok = 512;
    void* d_w = nullptr;
    float* d_x = nullptr;
    float* d_y = nullptr;
    FLUORO_CUDA_CHECK(cudaMalloc(&d_w, max_w));
    fill_random(d_w, max_w);
    std::vector<float> hx(static_cast<size_t>(kGemmTok * max_in));
    for (size_t i = 0; i < hx.size(); ++i) hx[i] = static_cast<float>((i * 7919) % 2001) / 1000 - 1;
    FLUORO_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_x), hx.size() * sizeof(float)));
    FLUORO_CUDA_CHECK(
        cudaMemcpy(d_x, hx.data(), hx.size() * sizeof(float), cudaMemcpyHostToDevice));
    FLUORO_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d_y),
                                 static_cast<size_t>(kGemmTok * max_out) * sizeof(float)));

    const size_t flush_bytes = size_t{128} << 20;
    void* d_flush = nullptr;
    FLUORO_CUDA_CHECK(cudaMalloc(&d_flush, flush_bytes));

    fluoro::cuda::Matmul mm(stream);
    std::printf("GEMV n_tok=1 (median of 50 after 5 warm-up; L2 flushed before each run)\n");
    std::printf("%-16s %8s %7s %6s %10s %10s %9s %7s\n", "model", "n_out", "n_in", "type",
                "weight MB", "time us", "GB/s", "%copy");
    double big_frac_min = 1e9, big_frac_max = 0.0;
    for (const Shape& s : shapes) {
        const size_t wb = weight_bytes(s);
        const size_t rb = wb / static_cast<size_t>(s.n_out);
        const double ms = time_ms(
            stream, 5, 50, [&] { mm.run_gemv(s.type, d_w, rb, s.n_in, s.n_out, d_x, 1, d_y); },
            d_flush, flush_bytes);
        const double gbps = static_cast<double>(wb) / (ms * 1e-3) / 1e9;
        const double frac = gbps / copy_gbps;
        if (wb >= (size_t{25} << 20)) {
            big_frac_min = std::min(big_frac_min, frac);
            big_frac_max = std::max(big_frac_max, frac);
        }
        std::printf("%-16s %8lld %7lld %6s %10.2f %10.1f %9.0f %6.1f%%\n", s.model,
                    static_cast<long long>(s.n_out), static_cast<long long>(s.n_in),
                    std::string(fluoro::type_name(s.type)).c_str(), static_cast<double>(wb) / 1e6,
                    ms * 1e3, gbps, 100 * frac);
    }

    const std::vector<Shape> gemm_shapes = {
        {"SmolLM2 up", 1536, 576, GgmlType::Q4_1},
        {"SmolLM2 lm_head", 49152, 576, GgmlType::Q8_0},
        {"Gemma3 lm_head", 262144, 640, GgmlType::Q8_0},
    };
    std::printf("\nGEMM n_tok=%lld (dequantize to F16 + cublasGemmEx; median of 10 after 2)\n",
                static_cast<long long>(kGemmTok));
    std::printf("%-16s %8s %7s %6s %10s %9s\n", "model", "n_out", "n_in", "type", "time us",
                "TFLOP/s");
    for (const Shape& s : gemm_shapes) {
        const size_t rb = weight_bytes(s) / static_cast<size_t>(s.n_out);
        const double ms = time_ms(stream, 2, 10, [&] {
            mm.run_gemm(s.type, d_w, rb, s.n_in, s.n_out, d_x, kGemmTok, d_y);
        });
        const double tflops = 2.0 * static_cast<double>(s.n_out) * static_cast<double>(s.n_in) *
                              static_cast<double>(kGemmTok) / (ms * 1e-3) / 1e12;
        std::printf("%-16s %8lld %7lld %6s %10.1f %9.1f\n", s.model,
                    static_cast<long long>(s.n_out), static_cast<long long>(s.n_in),
                    std::string(fluoro::type_name(s.type)).c_str(), ms * 1e3, tflops);
    }
    FLUORO_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::printf("\nGEMM scratch: %.1f MB\n", static_cast<double>(mm.scratch_bytes()) / 1e6);

    FLUORO_CUDA_CHECK(cudaFree(d_flush));
    FLUORO_CUDA_CHECK(cudaFree(d_w));
    FLUORO_CUDA_CHECK(cudaFree(d_x));
    FLUORO_CUDA_CHECK(cudaFree(d_y));
    FLUORO_CUDA_CHECK(cudaStreamDestroy(stream));

    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_begin).count();
    std::printf(
        "summary: copy %.0f GB/s (r+w); GEMV on weights >= 25 MiB reaches %.0f%%..%.0f%% "
        "of it (target >= 70%%)\n",
        copy_gbps, 100 * big_frac_min, 100 * big_frac_max);
    std::printf("summary: bench ran %.1f s\n", secs);
    return 0;
}

}  // namespace

int main() {
    try {
        return run();
    } catch (const fluoro::Error& e) {
        std::fprintf(stderr, "gemv_bench: %s\n", e.what());
        return 1;
    }
}
