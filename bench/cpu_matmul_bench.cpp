// CPU matmul throughput on the shapes of our two models: decode (n_tok = 1, a matrix-vector
// product that streams the weights once), speculative verification of 8 drafted tokens (n_tok = 9)
// and prefill tiles (n_tok = 64), on 1 and 2 threads.
// Reports weight_GB/s (bytes of quantized weights read per second, counting each call's matrix
// once) and tok/s. Set FLUORO_CPU_ISA=generic|avx2|avx512 to measure other kernels.
// BM_RowDot times the bare row kernels (one 2048-wide row held in L1, 1 or 8 activation rows) in
// multiply-adds per second, per weight type and instruction set: the numbers SIMD work moves.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/kernels/interleave.h"
#include "backend/cpu/kernels/vec_dot.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/thread_pool.h"
#include "tensor/blocks.h"
#include "tensor/fp16.h"
#include "tensor/ggml_type.h"
#include "tensor/quantize.h"

namespace fluoro::cpu {
namespace {

struct Shape {
    GgmlType type;
    int64_t n_in;
    int64_t n_out;
    bool interleaved = false;  // rows in kernels/interleave.h's groups, as the CPU backend loads
};

// Byte offsets of the fp16 scales of the k-quant and IQ blocks (we have no quantizer for them;
// MXFP4's exponent bytes and IQ1_M's nibble-spread d stay random, which changes no timing).
std::vector<size_t> k_scale_offsets(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_K:
            return {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)};
        case GgmlType::Q6_K:
            return {offsetof(BlockQ6_K, d)};
        case GgmlType::IQ4_XS:
        case GgmlType::IQ2_XXS:
        case GgmlType::IQ2_XS:
        case GgmlType::IQ2_S:
        case GgmlType::IQ3_XXS:
        case GgmlType::IQ3_S:
        case GgmlType::IQ1_S:
            return {0};  // d leads every IQ super-block
        default:
            return {};
    }
}

// n_out rows of random weights: quantized normal floats, or random k-quant blocks with sane scales.
std::vector<uint8_t> random_weights(const Shape& s) {
    std::mt19937 rng(42);
    const size_t row = *row_bytes(s.type, s.n_in);
    std::vector<uint8_t> bytes(row * s.n_out);
    if (type_traits(s.type).quantize) {
        std::normal_distribution<float> normal(0.0f, 0.05f);
        std::vector<float> x(s.n_in);
        for (int64_t o = 0; o < s.n_out; ++o) {
            for (float& v : x) v = normal(rng);
            quantize_row(s.type, x.data(), bytes.data() + o * row, s.n_in);
        }
        return bytes;
    }
    std::uniform_int_distribution<int> byte(0, 255);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(byte(rng));
    const uint16_t scale = fp32_to_fp16(0.001f);
    const size_t block = type_traits(s.type).block_bytes;
    for (size_t b = 0; b < bytes.size(); b += block)
        for (size_t off : k_scale_offsets(s.type)) std::memcpy(&bytes[b + off], &scale, 2);
    return bytes;
}

ThreadPool& pool(int n_threads) {
    static std::unique_ptr<ThreadPool> pools[3];
    if (!pools[n_threads]) pools[n_threads] = std::make_unique<ThreadPool>(n_threads);
    return *pools[n_threads];
}

void BM_Matmul(benchmark::State& state, Shape s) {
    const int64_t n_tok = state.range(0);
    const int n_threads = static_cast<int>(state.range(1));
    std::vector<uint8_t> w = random_weights(s);
    const size_t row = *row_bytes(s.type, s.n_in);
    if (s.interleaved) {
        if (!row_group_dot_fn(s.type)) {
            state.SkipWithError("no row-group kernel on this CPU or build");
            return;
        }
        std::vector<uint8_t> groups(w.size());
        interleave_rows(s.type, w.data(), s.n_out, s.n_in, groups.data());
        w = std::move(groups);
    }
    const WeightView view{s.type, s.n_in, s.n_out, w.data(), row, s.interleaved};

    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(n_tok * s.n_in), y(n_tok * s.n_out);
    for (float& v : x) v = normal(rng);
    MatmulScratch scratch;
    scratch.reserve(n_tok, s.n_in);

    for (auto _ : state) {
        matmul(pool(n_threads), view, x.data(), n_tok, y.data(), scratch);
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    state.counters["weight_GB/s"] =
        benchmark::Counter(double(w.size()) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["tok/s"] =
        benchmark::Counter(double(n_tok), benchmark::Counter::kIsIterationInvariantRate);
    state.SetLabel(std::string(type_name(s.type)) + " " + std::to_string(s.n_in) + "->" +
                   std::to_string(s.n_out));
}

// One token through `layers` copies of a matrix in turn, as decode walks a model's layers: the
// copies (more bytes than L3) stream from memory, each one short, so the cost of starting a
// matrix's stream shows, which one large matrix hides.
void BM_MatmulLayers(benchmark::State& state, Shape s) {
    const int layers = static_cast<int>(state.range(0));
    const int n_threads = static_cast<int>(state.range(1));
    if (s.interleaved && !row_group_dot_fn(s.type)) {
        state.SkipWithError("no row-group kernel on this CPU or build");
        return;
    }
    const std::vector<uint8_t> one = random_weights(s);
    std::vector<std::vector<uint8_t>> copies(layers, std::vector<uint8_t>(one.size()));
    for (auto& c : copies) {
        if (s.interleaved) {
            interleave_rows(s.type, one.data(), s.n_out, s.n_in, c.data());
        } else {
            c = one;
        }
    }
    const size_t row = *row_bytes(s.type, s.n_in);
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(s.n_in), y(s.n_out);
    for (float& v : x) v = normal(rng);
    MatmulScratch scratch;
    scratch.reserve(1, s.n_in);
    for (auto _ : state) {
        for (const auto& c : copies) {
            const WeightView view{s.type, s.n_in, s.n_out, c.data(), row, s.interleaved};
            matmul(pool(n_threads), view, x.data(), 1, y.data(), scratch);
        }
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    state.counters["weight_GB/s"] = benchmark::Counter(
        double(one.size()) * layers / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void shapes(benchmark::internal::Benchmark* b) {
    b->ArgNames({"n_tok", "threads"});
    for (int64_t n_tok : {1, 9, 64})
        for (int64_t threads : {1, 2}) b->Args({n_tok, threads});
    b->Unit(benchmark::kMicrosecond)->UseRealTime();
}

void BM_RowDot(benchmark::State& state, GgmlType type) {
    const int64_t n = 2048;
    const int n_x = static_cast<int>(state.range(0));
    const auto isa = static_cast<CpuIsa>(state.range(1));
    if (!cpu_isa_supported(isa)) {
        state.SkipWithError("no kernels for this instruction set on this CPU or build");
        return;
    }
    const std::vector<uint8_t> w = random_weights({type, n, 1});
    const GgmlType partner = vec_dot_partner(type);
    const size_t stride = *row_bytes(partner, n);
    std::vector<float> x(n);
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<uint8_t> xq(stride * n_x);
    for (int t = 0; t < n_x; ++t) {
        for (float& v : x) v = normal(rng);
        quantize_row(partner, x.data(), xq.data() + t * stride, n);
    }
    const RowDotFn fn = row_dot_fn(type, isa);
    float out[kMaxDotRows];
    for (auto _ : state) {
        fn(w.data(), xq.data(), stride, n_x, n, out);
        benchmark::DoNotOptimize(out);
    }
    state.counters["GMAC/s"] =
        benchmark::Counter(double(n) * n_x / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void row_dot_args(benchmark::internal::Benchmark* b) {
    b->ArgNames({"n_x", "isa"});  // isa: 0 generic, 1 avx2, 2 avx512 (CpuIsa)
    for (int64_t n_x : {1, 8})
        for (CpuIsa isa : {CpuIsa::Generic, CpuIsa::Avx2, CpuIsa::Avx512})
            b->Args({n_x, static_cast<int64_t>(isa)});
}

// One activation row into the group kernels' widened format (quantize_group_x_row): what every
// token pays before each matmul on interleaved weights.
void BM_QuantizeGroupX(benchmark::State& state, GgmlType weight) {
    const int64_t n = state.range(0);
    std::mt19937 rng(3);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = dist(rng);
    std::vector<std::byte> dst(group_x_row_bytes(weight, n));
    for (auto _ : state) {
        quantize_group_x_row(weight, x.data(), dst.data(), n);
        benchmark::DoNotOptimize(dst.data());
    }
    state.counters["rows/s"] =
        benchmark::Counter(double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_QuantizeGroupX, q4_1, GgmlType::Q4_1)->Arg(576)->Arg(1536);
BENCHMARK_CAPTURE(BM_QuantizeGroupX, q8_0, GgmlType::Q8_0)->Arg(576)->Arg(640);

BENCHMARK_CAPTURE(BM_RowDot, f32, GgmlType::F32)->Apply(row_dot_args);
BENCHMARK_CAPTURE(BM_RowDot, f16, GgmlType::F16)->Apply(row_dot_args);
BENCHMARK_CAPTURE(BM_RowDot, bf16, GgmlType::BF16)->Apply(row_dot_args);
BENCHMARK_CAPTURE(BM_RowDot, q4_0, GgmlType::Q4_0)->Apply(row_dot_args);
BENCHMARK_CAPTURE(BM_RowDot, q4_1, GgmlType::Q4_1)->Apply(row_dot_args);
BENCHMARK_CAPTURE(BM_RowDot, q5_0, GgmlType::Q5_0)->Apply(row_dot_args);
BENCHMARK_CAPTURE(BM_RowDot, q5_1, GgmlType::Q5_1)->Apply(row_dot_args);
BENCHMARK_CAPTURE(BM_RowDot, q8_0, GgmlType::Q8_0)->Apply(row_dot_args);
BENCHMARK_CAPTURE(BM_RowDot, q4_K, GgmlType::Q4_K)->Apply(row_dot_args);
BENCHMARK_CAPTURE(BM_RowDot, q6_K, GgmlType::Q6_K)->Apply(row_dot_args);
BENCHMARK_CAPTURE(BM_RowDot, iq4_nl, GgmlType::IQ4_NL)->Apply(row_dot_args);
BENCHMARK_CAPTURE(BM_RowDot, mxfp4, GgmlType::MXFP4)->Apply(row_dot_args);
BENCHMARK_CAPTURE(BM_RowDot, iq4_xs, GgmlType::IQ4_XS)->Apply(row_dot_args);
BENCHMARK_CAPTURE(BM_RowDot, iq2_xxs, GgmlType::IQ2_XXS)->Apply(row_dot_args);
BENCHMARK_CAPTURE(BM_RowDot, iq2_xs, GgmlType::IQ2_XS)->Apply(row_dot_args);
BENCHMARK_CAPTURE(BM_RowDot, iq2_s, GgmlType::IQ2_S)->Apply(row_dot_args);
BENCHMARK_CAPTURE(BM_RowDot, iq3_xxs, GgmlType::IQ3_XXS)->Apply(row_dot_args);
BENCHMARK_CAPTURE(BM_RowDot, iq3_s, GgmlType::IQ3_S)->Apply(row_dot_args);
BENCHMARK_CAPTURE(BM_RowDot, iq1_s, GgmlType::IQ1_S)->Apply(row_dot_args);
BENCHMARK_CAPTURE(BM_RowDot, iq1_m, GgmlType::IQ1_M)->Apply(row_dot_args);

// SmolLM2-135M (Q4_1 linears, Q8_0 tied LM head) and Gemma 3 270M (Q5_0 fallbacks, Q4_K/Q6_K).
BENCHMARK_CAPTURE(BM_Matmul, q4_1_576x1536, Shape{GgmlType::Q4_1, 576, 1536})->Apply(shapes);
BENCHMARK_CAPTURE(BM_Matmul, q4_1_1536x576, Shape{GgmlType::Q4_1, 1536, 576})->Apply(shapes);
// The same in the CPU backend's interleaved layout, and a 47 MB pair larger than the 32 MiB L3 of
// the test hosts: decode streams SmolLM2's 63 MiB of Q4_1 weights from memory, not from cache.
BENCHMARK_CAPTURE(BM_Matmul, q4_1x8_576x1536, Shape{GgmlType::Q4_1, 576, 1536, true})
    ->Apply(shapes);
BENCHMARK_CAPTURE(BM_Matmul, q4_1x8_1536x576, Shape{GgmlType::Q4_1, 1536, 576, true})
    ->Apply(shapes);
BENCHMARK_CAPTURE(BM_MatmulLayers, q4_1_576x1536, Shape{GgmlType::Q4_1, 576, 1536})
    ->ArgNames({"layers", "threads"})
    ->Args({90, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_MatmulLayers, q4_1x8_576x1536, Shape{GgmlType::Q4_1, 576, 1536, true})
    ->ArgNames({"layers", "threads"})
    ->Args({90, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, q4_1_1536x49152, Shape{GgmlType::Q4_1, 1536, 49152})->Apply(shapes);
BENCHMARK_CAPTURE(BM_Matmul, q4_1x8_1536x49152, Shape{GgmlType::Q4_1, 1536, 49152, true})
    ->Apply(shapes);
BENCHMARK_CAPTURE(BM_Matmul, q8_0_576x49152, Shape{GgmlType::Q8_0, 576, 49152})->Apply(shapes);
BENCHMARK_CAPTURE(BM_Matmul, q8_0x8_576x49152, Shape{GgmlType::Q8_0, 576, 49152, true})
    ->Apply(shapes);
// Gemma 3 270M's output head (262144 × 640, 178 MB): the largest matrix either default model reads
// per token.
BENCHMARK_CAPTURE(BM_Matmul, q8_0x8_640x262144, Shape{GgmlType::Q8_0, 640, 262144, true})
    ->Apply(shapes);
BENCHMARK_CAPTURE(BM_Matmul, q5_0_640x2048, Shape{GgmlType::Q5_0, 640, 2048})->Apply(shapes);
BENCHMARK_CAPTURE(BM_Matmul, q5_0x8_640x2048, Shape{GgmlType::Q5_0, 640, 2048, true})
    ->Apply(shapes);
BENCHMARK_CAPTURE(BM_Matmul, q4_K_2048x640, Shape{GgmlType::Q4_K, 2048, 640})->Apply(shapes);
BENCHMARK_CAPTURE(BM_Matmul, q4_Kx8_2048x640, Shape{GgmlType::Q4_K, 2048, 640, true})
    ->Apply(shapes);
// Llama-3.2-1B's FFN at Q4_K_M (scripts/make_shape_model.py): up/gate 2048 -> 8192 (9.4 MB, in
// the GGUF layout and interleaved) and down 8192 -> 2048.
BENCHMARK_CAPTURE(BM_Matmul, q4_K_2048x8192, Shape{GgmlType::Q4_K, 2048, 8192})->Apply(shapes);
BENCHMARK_CAPTURE(BM_Matmul, q4_Kx8_2048x8192, Shape{GgmlType::Q4_K, 2048, 8192, true})
    ->Apply(shapes);
BENCHMARK_CAPTURE(BM_Matmul, q4_Kx8_8192x2048, Shape{GgmlType::Q4_K, 8192, 2048, true})
    ->Apply(shapes);
// Decode through its 16 layers' up projections (150 MB, from memory), both layouts.
BENCHMARK_CAPTURE(BM_MatmulLayers, q4_K_2048x8192, Shape{GgmlType::Q4_K, 2048, 8192})
    ->ArgNames({"layers", "threads"})
    ->Args({16, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_MatmulLayers, q4_Kx8_2048x8192, Shape{GgmlType::Q4_K, 2048, 8192, true})
    ->ArgNames({"layers", "threads"})
    ->Args({16, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Matmul, q6_K_2048x640, Shape{GgmlType::Q6_K, 2048, 640})->Apply(shapes);

}  // namespace
}  // namespace fluoro::cpu

BENCHMARK_MAIN();
