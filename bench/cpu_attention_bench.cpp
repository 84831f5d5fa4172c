// CPU attention (backend/cpu/cpu_attention.h), standard vs flash, over a KV cache, for the
// head layouts of our two models: SmolLM2 (9 query heads over 3 KV heads of 64) and Gemma 3 270M
// (4 over 1 KV head of 256).
//   Decode: one query token attending to `ctx` cached tokens (the cached K/V of one layer read
//     once: kv_GB/s counts those bytes per call), ctx 256 .. 32k.
//   DecodeModel: a decode step's attention over every layer of SmolLM2 from the paged cache, in
//     either KV layout (token-major or head-major), the KV read from memory as in the engine.
//   Prefill: the attention of a whole ctx-token prompt as the engine runs it (512-token batches,
//     each attending to everything before it), ctx 256 .. 8k.
// Counters: scratch_bytes is the attention working memory allocated (its peak: it only grows).
// impl 0 = standard, 1 = flash; kv = the cache type (0 F16, 1 Q8_0, 2 Q4_0; decode only, the
// prefill rows are F16). Set FLUORO_CPU_ISA to compare the kernel sets.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cpu/attention_readout.h"
#include "backend/cpu/cpu_attention.h"
#include "kv/contiguous_kv.h"
#include "kv/paged_kv.h"

namespace fluoro::cpu {
namespace {

struct Layout {
    int64_t n_head, n_head_kv, head_dim;
};
constexpr Layout kSmolLM2{9, 3, 64};
constexpr Layout kGemma3{4, 1, 256};
constexpr int64_t kBatch = 512;

AttentionParams params_of(const Layout& l) {
    AttentionParams p;
    p.n_head = l.n_head;
    p.n_head_kv = l.n_head_kv;
    p.head_dim_k = p.head_dim_v = l.head_dim;
    p.scale = 0.125f;
    return p;
}

// Tokens 0..ctx-1 of sequence 0 with random keys and values, stored into every layer of kv as a
// prefill would; the positions, sequence ids and tokens stay for the queries.
struct Filled {
    std::vector<int32_t> pos, seq, tok;
};
Filled fill_kv(ThreadPool& pool, AttentionParams p, const Layout& l, int64_t ctx, KvCache& kv,
               std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int64_t kv_width = l.n_head_kv * l.head_dim;
    std::vector<float> k(size_t(ctx * kv_width)), v(k.size());
    for (float& x : k) x = normal(rng);
    for (float& x : v) x = normal(rng);
    Filled f{std::vector<int32_t>(size_t(ctx)), std::vector<int32_t>(size_t(ctx), 0),
             std::vector<int32_t>(size_t(ctx), 0)};
    std::iota(f.pos.begin(), f.pos.end(), 0);
    for (int64_t il = 0; il < kv.shape().n_layer; ++il) {
        p.layer = il;
        store_kv(pool, p, Act{k.data(), ctx, kv_width}, Act{v.data(), ctx, kv_width},
                 Batch{f.tok, f.pos, f.seq, {}}, kv);
    }
    return f;
}

// n_query = 0: the whole context as a prefill in kBatch pieces; else the last n_query tokens.
// With `capture`, also what the attention panel asks during a chat of every layer: the sparsity
// readout and H2O scores of the last row (every head); with `capture_row` also the probabilities
// of one head's last row (asked of one layer per step).
void run(benchmark::State& state, const Layout& l, int64_t n_query, bool capture = false,
         bool capture_row = false) {
    const int64_t ctx = state.range(0);
    const auto impl = state.range(1) ? AttentionImpl::Flash : AttentionImpl::Standard;
    const int threads = int(state.range(2));
    constexpr KvType kTypes[] = {KvType::F16, KvType::Q8_0, KvType::Q4_0};
    const KvType type =
        state.range(3) >= 0 && state.range(3) < 3 ? kTypes[state.range(3)] : KvType::F16;
    KvShape shape;
    shape.n_layer = 1;
    shape.n_head_kv = {l.n_head_kv};
    shape.head_dim_k = shape.head_dim_v = l.head_dim;
    shape.type = type;
    shape.n_ctx = ctx;
    ContiguousKvCache kv(shape);
    ThreadPool pool(threads);
    const AttentionParams p = params_of(l);

    // Fill the whole cache once (as a prefill would), then time the queries.
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    Filled filled = fill_kv(pool, p, l, ctx, kv, rng);
    std::vector<int32_t>&pos = filled.pos, &seq = filled.seq, &tok = filled.tok;

    const int64_t rows = n_query > 0 ? n_query : std::min(ctx, kBatch);
    const int64_t q_width = l.n_head * l.head_dim;
    std::vector<float> q(size_t(rows * q_width));
    for (float& x : q) x = normal(rng);
    std::vector<float> out(q.size());
    AttentionScratch scratch;
    AttentionCapture cap;
    cap.stats = true;
    if (capture_row) cap.regions.push_back({0, 0, 0, 1, 0, 0});
    KeyScores key_scores;
    const auto attend_rows = [&](int64_t first, int64_t n) {
        const Batch batch{std::span(tok).subspan(size_t(first), size_t(n)),
                          std::span<const int32_t>(pos).subspan(size_t(first), size_t(n)),
                          std::span(seq).subspan(size_t(first), size_t(n)),
                          {}};
        const Act qa{q.data(), n, q_width};
        attend(pool, p, qa, batch, kv, Act{out.data(), n, q_width}, scratch,
               {impl, capture ? n - 1 : -1});
        if (!capture) return;
        capture_rows(p, qa, batch, kv, scratch, cap);
        compute_sparsity(pool, p, batch, kv.shape(), scratch, cap, key_scores);
        cap.rows.clear();
        cap.sparsity.clear();
    };
    for (auto _ : state) {
        if (n_query > 0) {
            attend_rows(ctx - n_query, n_query);
        } else {
            for (int64_t first = 0; first < ctx; first += kBatch)
                attend_rows(first, std::min(kBatch, ctx - first));
        }
        benchmark::DoNotOptimize(out.data());
    }
    const double kv_bytes = double(ctx) * double(shape.k_row_bytes(0) + shape.v_row_bytes(0));
    if (n_query > 0)
        state.counters["kv_GB/s"] =
            benchmark::Counter(kv_bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["tok/s"] = benchmark::Counter(double(n_query > 0 ? n_query : ctx),
                                                 benchmark::Counter::kIsIterationInvariantRate);
    state.counters["scratch_bytes"] = double(scratch.bytes());
}

// A whole model's decode step of attention: one query token against `ctx` cached tokens in each
// of n_layer layers, the layers in turn, from the engine's paged cache (SmolLM2: 30 layers, 94 MB
// of F16 KV at ctx 4096, far more than the last-level cache, so the rows come from memory as in
// the engine). head_major 0 / 1: the cache's layout (KvShape::head_major).
void run_layers(benchmark::State& state, const Layout& l, int64_t n_layer) {
    const int64_t ctx = state.range(0);
    const int threads = int(state.range(1));
    KvShape shape;
    shape.n_layer = n_layer;
    shape.n_head_kv.assign(size_t(n_layer), l.n_head_kv);
    shape.head_dim_k = shape.head_dim_v = l.head_dim;
    shape.type = KvType::F16;
    shape.n_ctx = ctx;
    shape.head_major = state.range(2) != 0;
    PagedKvCache kv(shape);
    kv.set_length(0, ctx);
    ThreadPool pool(threads);
    AttentionParams p = params_of(l);
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    Filled filled = fill_kv(pool, p, l, ctx, kv, rng);
    std::vector<int32_t>&pos = filled.pos, &seq = filled.seq, &tok = filled.tok;
    const int64_t q_width = l.n_head * l.head_dim;
    std::vector<float> q(static_cast<size_t>(q_width)), out(q.size());
    for (float& x : q) x = normal(rng);
    AttentionScratch scratch;
    const Batch batch{std::span(tok).subspan(size_t(ctx - 1), 1),
                      std::span<const int32_t>(pos).subspan(size_t(ctx - 1), 1),
                      std::span(seq).subspan(size_t(ctx - 1), 1),
                      {}};
    for (auto _ : state) {
        for (int64_t il = 0; il < n_layer; ++il) {
            p.layer = il;
            attend(pool, p, Act{q.data(), 1, q_width}, batch, kv, Act{out.data(), 1, q_width},
                   scratch, {AttentionImpl::Flash, -1});
        }
        benchmark::DoNotOptimize(out.data());
    }
    const double kv_bytes =
        double(n_layer) * double(ctx) * double(shape.k_row_bytes(0) + shape.v_row_bytes(0));
    state.counters["kv_GB/s"] =
        benchmark::Counter(kv_bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
void BM_AttentionDecodeModel_SmolLM2(benchmark::State& s) {
    run_layers(s, kSmolLM2, 30);
}

void BM_AttentionDecode_SmolLM2(benchmark::State& s) {
    run(s, kSmolLM2, 1);
}
void BM_AttentionDecode_Gemma3(benchmark::State& s) {
    run(s, kGemma3, 1);
}
void BM_AttentionDecodeStats_SmolLM2(benchmark::State& s) {
    run(s, kSmolLM2, 1, true);
}
void BM_AttentionDecodeStatsRow_SmolLM2(benchmark::State& s) {
    run(s, kSmolLM2, 1, true, true);
}
void BM_AttentionPrefill_SmolLM2(benchmark::State& s) {
    run(s, kSmolLM2, 0);
}
void BM_AttentionPrefill_Gemma3(benchmark::State& s) {
    run(s, kGemma3, 0);
}

void args(benchmark::internal::Benchmark* b, std::initializer_list<int64_t> contexts,
          std::initializer_list<int64_t> kv_types) {
    for (int64_t ctx : contexts)
        for (int64_t impl : {0, 1})
            for (int64_t kv : kv_types) b->Args({ctx, impl, 2, kv});
    b->ArgNames({"ctx", "flash", "threads", "kv"})->UseRealTime();
}
void decode_args(benchmark::internal::Benchmark* b) {
    args(b, {256, 1024, 2048, 4096, 8192, 32768}, {0, 1, 2});
}
void prefill_args(benchmark::internal::Benchmark* b) {
    args(b, {256, 1024, 2048, 4096, 8192}, {0});
}

BENCHMARK(BM_AttentionDecode_SmolLM2)->Apply(decode_args);
BENCHMARK(BM_AttentionDecode_Gemma3)->Apply(decode_args);
BENCHMARK(BM_AttentionDecodeStats_SmolLM2)->Apply(decode_args);
BENCHMARK(BM_AttentionDecodeStatsRow_SmolLM2)->Apply(decode_args);
BENCHMARK(BM_AttentionDecodeModel_SmolLM2)
    ->ArgsProduct({{4096, 16384}, {2}, {0, 1}})
    ->ArgNames({"ctx", "threads", "head_major"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttentionPrefill_SmolLM2)->Apply(prefill_args)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttentionPrefill_Gemma3)->Apply(prefill_args)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fluoro::cpu

BENCHMARK_MAIN();
