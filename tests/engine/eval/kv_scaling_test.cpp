// The textbook-claim measurements' mechanics on a tiny random model (eval/kv_scaling.h,
// eval/kv_memory.h): the cache-less path (the prefix through the model again) gives the cached
// path's logits exactly — the kernels are batch-invariant (decode/sequence.h extend()), so the
// same arithmetic in the same order, no tolerance needed — every position is timed both ways,
// the log-log slope is the exponent of a power law, and the KV formula's bytes are the
// allocator's.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "eval/kv_memory.h"
#include "eval/kv_scaling.h"
#include "gguf/test_model.h"
#include "model/model.h"
#include "test_temp.h"

namespace fluoro {
namespace {

struct Tiny {
    std::unique_ptr<cpu::CpuBackend> backend = std::make_unique<cpu::CpuBackend>(1);
    std::unique_ptr<Model> model;
};

Tiny tiny(uint32_t head_dim = 0, uint32_t n_head_kv = 2) {
    gguf::TestModelSpec spec;
    spec.head_dim = head_dim;
    spec.n_head_kv = n_head_kv;
    const auto path = test::unique_temp_path("kv_scaling_tiny.gguf");
    gguf::write_test_model(path, spec);
    Tiny t;
    t.model = Model::load(path, *t.backend, ModelLoadOptions{64, 64});
    return t;
}

std::vector<int32_t> tokens(const Model& m, size_t n) {
    std::vector<int32_t> t(n);
    for (size_t i = 0; i < n; ++i) t[i] = int32_t((i * 37 + 11) % size_t(m.n_vocab()));
    return t;
}

TEST(KvScaling, WithoutTheCacheTheLogitsAreTheSameAndEveryPointIsTimed) {
    Tiny t = tiny();
    const auto kv = t.model->create_kv(128, 1, KvType::F32);
    const std::vector<int32_t> text = tokens(*t.model, 100);
    const int64_t positions[] = {8, 16, 32, 64};
    const KvScalingResult r = measure_kv_scaling(*t.model, *kv, text, positions, 2);
    ASSERT_EQ(r.points.size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(r.points[i].position, positions[i]);
        EXPECT_GT(r.points[i].cached_ms, 0.0);
        EXPECT_GT(r.points[i].recompute_ms, 0.0);
    }
    EXPECT_EQ(r.max_logit_diff, 0.0f);
}

TEST(KvScaling, RefusesPositionsItCannotMeasure) {
    Tiny t = tiny();
    const auto kv = t.model->create_kv(32, 1, KvType::F32);
    const std::vector<int32_t> text = tokens(*t.model, 100);
    const int64_t past_cache[] = {8, 40};
    EXPECT_THROW(measure_kv_scaling(*t.model, *kv, text, past_cache), Error);
    const int64_t past_text[] = {200};
    EXPECT_THROW(measure_kv_scaling(*t.model, *kv, text, past_text), Error);
    const int64_t descending[] = {16, 8};
    EXPECT_THROW(measure_kv_scaling(*t.model, *kv, text, descending), Error);
}

TEST(KvScaling, LogLogSlopeIsThePowerLawsExponent) {
    const std::vector<double> x{10, 100, 1000};
    EXPECT_NEAR(loglog_slope(x, std::vector<double>{3, 30, 300}), 1.0, 1e-12);
    EXPECT_NEAR(loglog_slope(x, std::vector<double>{5, 500, 50000}), 2.0, 1e-12);
    EXPECT_NEAR(loglog_slope(x, std::vector<double>{7, 7, 7}), 0.0, 1e-12);
    EXPECT_EQ(loglog_slope(std::vector<double>{10}, std::vector<double>{1}), 0.0);
}

// Tiny model: 2 layers, 2 KV heads, head dim 32 (so the quantized types can hold it):
// 2 × 2 × 2 × 32 = 256 values per token.
TEST(KvMemory, TheFormulasBytesAreTheAllocators) {
    Tiny t = tiny(32);
    const KvType types[] = {KvType::F32, KvType::F16, KvType::Q8_0, KvType::Q4_0};
    const std::vector<KvMemoryRow> rows = measure_kv_memory(*t.model, types, 64);
    ASSERT_EQ(rows.size(), 4u);
    const uint64_t expected[] = {256 * 4, 256 * 2, 256 / 32 * 34, 256 / 32 * 18};
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(rows[i].formula_per_token, expected[i]) << i;
        EXPECT_EQ(rows[i].cache_per_token, expected[i]) << i;
        EXPECT_GE(rows[i].allocated, expected[i] * 64) << i;  // a whole context's worth at least
    }
    EXPECT_EQ(kv_bytes_per_token(42, 8, 256, 2.0), 344064u);  // Gemma 2 9B, f16
}

}  // namespace
}  // namespace fluoro
