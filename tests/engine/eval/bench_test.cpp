// run_bench on a small seeded model written by our GGUF writer: test names and sample counts as
// llama-bench prints them, --depth leaves exactly `depth` tokens in the cache under every timed
// run (written once, never overwritten), and a cache too small for the tests is refused.
#include "eval/bench.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "gguf/test_model.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "test_temp.h"

namespace fluoro {
namespace {

struct BenchModel {
    BenchModel() : backend(1) {
        const auto path = test::unique_temp_path("bench_test.gguf");
        gguf::write_test_model(path, gguf::TestModelSpec{});
        ModelLoadOptions opt;
        opt.max_batch = 16;  // a 40-token depth is prefilled in three pieces
        opt.max_logit_rows = 1;
        model = Model::load(path, backend, opt);
    }
    std::unique_ptr<KvCache> kv(int64_t n_ctx) const {
        return model->create_kv(n_ctx, 1, KvType::F32);
    }
    cpu::CpuBackend backend;
    std::unique_ptr<Model> model;
};

BenchOptions options(int64_t n_prompt, int64_t n_gen, int64_t depth, int64_t reps) {
    BenchOptions o;
    o.n_prompt = n_prompt;
    o.n_gen = n_gen;
    o.depth = depth;
    o.repetitions = reps;
    return o;
}

// K rows [0, n) of layer 0 as bytes.
std::vector<std::byte> k_rows(const KvCache& kv, int64_t n) {
    const size_t row = kv.shape().k_row_bytes(0);
    std::vector<std::byte> out(row * size_t(n));
    for (int64_t p = 0; p < n; ++p) kv.read_k(0, 0, p, &out[size_t(p) * row]);
    return out;
}

TEST(Bench, NamesAndSamplesWithoutDepth) {
    BenchModel m;
    auto kv = m.kv(64);
    const auto results = run_bench(*m.model, *kv, options(20, 6, 0, 3));
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[0].test, "pp20");
    EXPECT_EQ(results[1].test, "tg6");
    for (const auto& r : results) {
        EXPECT_EQ(r.depth, 0);
        ASSERT_EQ(r.samples_tps.size(), 3u);
        for (double s : r.samples_tps) EXPECT_GT(s, 0);
        EXPECT_GT(r.mean_tps, 0);
        EXPECT_GT(r.first_run_tps, 0);  // the warm-up, timed apart (the cold figure)
    }
    EXPECT_EQ(kv->length(0), 6);  // the last run was tg from an empty cache
}

TEST(Bench, DepthIsInTheCacheUnderEveryTimedRun) {
    BenchModel m;
    const int64_t depth = 40;
    auto kv = m.kv(64);
    const auto results = run_bench(*m.model, *kv, options(12, 5, depth, 2));
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[0].test, "pp12@d40");
    EXPECT_EQ(results[1].test, "tg5@d40");
    EXPECT_EQ(results[0].depth, depth);
    EXPECT_EQ(results[1].tokens, 5);
    EXPECT_EQ(kv->length(0), depth + 5);  // tg wrote positions depth..depth+4
    // The depth rows are exactly those of a bench that only prefilled them: the pp and tg runs
    // (warm-ups and repetitions) wrote past them, never over them.
    auto ref = m.kv(64);
    run_bench(*m.model, *ref, options(0, 1, depth, 1));
    EXPECT_EQ(k_rows(*kv, depth), k_rows(*ref, depth));
}

TEST(Bench, TgAtDepthOnly) {
    BenchModel m;
    auto kv = m.kv(48);
    const auto results = run_bench(*m.model, *kv, options(0, 8, 40, 1));
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].test, "tg8@d40");
    EXPECT_EQ(kv->length(0), 48);
}

TEST(Bench, CacheMustHoldDepthPlusTheLongerTest) {
    BenchModel m;
    const BenchOptions o = options(10, 6, 30, 1);
    EXPECT_EQ(bench_context(o), 40);
    auto small = m.kv(39);
    EXPECT_THROW(run_bench(*m.model, *small, o), Error);
    auto exact = m.kv(40);
    EXPECT_NO_THROW(run_bench(*m.model, *exact, o));
    EXPECT_THROW(run_bench(*m.model, *exact, options(4, 4, -1, 1)), Error);
    EXPECT_THROW(run_bench(*m.model, *exact, options(4, 4, 0, 0)), Error);
}

TEST(Bench, TestNames) {
    EXPECT_EQ(bench_test_name("pp", 512, 0), "pp512");
    EXPECT_EQ(bench_test_name("tg", 128, 4096), "tg128@d4096");
}

}  // namespace
}  // namespace fluoro
