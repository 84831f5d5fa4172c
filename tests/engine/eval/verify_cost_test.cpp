// The verification-cost measurement behind claim 7 and the speculative benchmark
// (eval/spec_bench.h measure_verify_cost) on a tiny random model: one value per k = 0..max_k,
// v(0) the unit by definition, every one a positive ratio, and the cache left holding the prompt
// plus at most the longest verified batch.
#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "eval/spec_bench.h"
#include "gguf/test_model.h"
#include "model/model.h"
#include "test_temp.h"

namespace fluoro {
namespace {

TEST(VerifyCost, OneRatioPerDraftLengthWithTheSingleTokenForwardAsTheUnit) {
    gguf::TestModelSpec spec;
    const auto path = test::unique_temp_path("verify_cost_tiny.gguf");
    gguf::write_test_model(path, spec);
    cpu::CpuBackend backend(1);
    const auto model = Model::load(path, backend, ModelLoadOptions{64, 64});
    const auto kv = model->create_kv(64, 1, KvType::F32);
    std::vector<int32_t> prompt(20);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t(3 + i * 7 % 100);
    const std::vector<double> v = spec::measure_verify_cost(*model, *kv, prompt, 5);
    ASSERT_EQ(v.size(), 6u);
    EXPECT_EQ(v[0], 1.0);
    for (const double x : v) EXPECT_GT(x, 0.0);
    EXPECT_LE(kv->length(0), int64_t(prompt.size()) + 6);
}

}  // namespace
}  // namespace fluoro
