// CPU attention (backend/cpu/cpu_attention.h) over an F16 KV cache at several contexts, for the
// head layouts of our two models: SmolLM2 (9 query heads over 3 KV heads of 64) and Gemma 3 270M
// (4 over 1 KV head of 256). Decode: one query token attending to `ctx` cached tokens (the
// cached K/V of one layer read once: kv_GB/s counts those bytes per call). Prefill: a batch of 64
// query tokens at the end of the context. Run on 1 and 2 threads; set FLUORO_CPU_ISA to compare
// the kernel sets.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cpu/cpu_attention.h"
#include "kv/contiguous_kv.h"

namespace fluoro::cpu {
namespace {

struct Layout {
    int64_t n_head, n_head_kv, head_dim;
};
constexpr Layout kSmolLM2{9, 3, 64};
constexpr Layout kGemma3{4, 1, 256};

void run(benchmark::State& state, const Layout& l, int64_t n_query) {
    const int64_t ctx = state.range(0);
    const int threads = int(state.range(1));
    KvShape shape;
    shape.n_layer = 1;
    shape.n_head_kv = {l.n_head_kv};
    shape.head_dim_k = shape.head_dim_v = l.head_dim;
    shape.type = KvType::F16;
    shape.n_ctx = ctx;
    ContiguousKvCache kv(shape);
    ThreadPool pool(threads);
    AttentionParams p;
    p.n_head = l.n_head;
    p.n_head_kv = l.n_head_kv;
    p.head_dim_k = p.head_dim_v = l.head_dim;
    p.scale = 0.125f;

    // Fill the whole cache once (as a prefill would), then time the last n_query tokens.
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int64_t kv_width = l.n_head_kv * l.head_dim;
    std::vector<float> k(size_t(ctx * kv_width)), v(k.size());
    for (float& x : k) x = normal(rng);
    for (float& x : v) x = normal(rng);
    std::vector<int32_t> pos(static_cast<size_t>(ctx)), seq(size_t(ctx), 0), tok(size_t(ctx), 0);
    std::iota(pos.begin(), pos.end(), 0);
    store_kv(pool, p, Act{k.data(), ctx, kv_width}, Act{v.data(), ctx, kv_width},
             Batch{tok, pos, seq, {}}, kv);

    std::vector<float> q(size_t(n_query * l.n_head * l.head_dim));
    for (float& x : q) x = normal(rng);
    std::vector<float> out(q.size());
    const std::span<const int32_t> qpos(pos.data() + ctx - n_query, size_t(n_query));
    const Batch batch{
        std::span(tok).first(size_t(n_query)), qpos, std::span(seq).first(size_t(n_query)), {}};
    AttentionScratch scratch;
    for (auto _ : state) {
        attend(pool, p, Act{q.data(), n_query, l.n_head * l.head_dim}, batch, kv,
               Act{out.data(), n_query, l.n_head * l.head_dim}, scratch);
        benchmark::DoNotOptimize(out.data());
    }
    const double kv_bytes = double(ctx) * double(kv_width) * 2.0 * 2.0;  // K and V, fp16
    state.counters["kv_GB/s"] =
        benchmark::Counter(kv_bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["tok/s"] =
        benchmark::Counter(double(n_query), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_AttentionDecode_SmolLM2(benchmark::State& s) {
    run(s, kSmolLM2, 1);
}
void BM_AttentionDecode_Gemma3(benchmark::State& s) {
    run(s, kGemma3, 1);
}
void BM_AttentionPrefill64_SmolLM2(benchmark::State& s) {
    run(s, kSmolLM2, 64);
}
void BM_AttentionPrefill64_Gemma3(benchmark::State& s) {
    run(s, kGemma3, 64);
}

void contexts(benchmark::internal::Benchmark* b) {
    for (int64_t ctx : {512, 4096, 16384})
        for (int64_t threads : {1, 2}) b->Args({ctx, threads});
    b->ArgNames({"ctx", "threads"})->UseRealTime();
}

BENCHMARK(BM_AttentionDecode_SmolLM2)->Apply(contexts);
BENCHMARK(BM_AttentionDecode_Gemma3)->Apply(contexts);
BENCHMARK(BM_AttentionPrefill64_SmolLM2)->Apply(contexts);
BENCHMARK(BM_AttentionPrefill64_Gemma3)->Apply(contexts);

}  // namespace
}  // namespace fluoro::cpu

BENCHMARK_MAIN();
