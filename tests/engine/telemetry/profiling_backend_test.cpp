// The profiling decorator changes no result, times every operation category the forward pass
// uses while timing is on and nothing while it is off; the step meter splits a step's wall time
// without ever exceeding it.
#include "telemetry/profiling_backend.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "backend/cpu/cpu_backend.h"
#include "decode/sequence.h"
#include "gguf/test_model.h"
#include "model/model.h"
#include "telemetry/step_meter.h"
#include "test_temp.h"

namespace fluoro {
namespace {

std::filesystem::path tiny_model() {
    const auto path = test::unique_temp_path("profiling_tiny.gguf");
    gguf::TestModelSpec spec;
    spec.weight_type = GgmlType::Q8_0;
    gguf::write_test_model(path, spec);
    return path;
}

std::vector<float> logits_of(Model& m, std::span<const int32_t> prompt) {
    auto kv = m.create_kv(64, 1, KvType::F32);
    Sequence seq(m, *kv, 0);
    const auto l = seq.prefill(prompt);
    return {l.begin(), l.end()};
}

TEST(ProfilingBackend, SameLogitsAndEveryCategoryTimed) {
    const auto path = tiny_model();
    const std::vector<int32_t> prompt = {1, 5, 9, 42, 7};
    cpu::CpuBackend plain_cpu(1);
    auto plain = Model::load(path, plain_cpu);
    cpu::CpuBackend inner(1);
    ProfilingBackend prof(inner);
    auto profiled = Model::load(path, prof);
    EXPECT_EQ(prof.name(), "cpu");
    EXPECT_GT(prof.weights_bytes(), 0);
    EXPECT_GT(prof.scratch_bytes(), 0);

    EXPECT_EQ(logits_of(*plain, prompt), logits_of(*profiled, prompt));
    const CategoryTimes t = prof.totals();
    for (auto c : {TimeCategory::Matmul, TimeCategory::Attention, TimeCategory::NormRope,
                   TimeCategory::Ffn, TimeCategory::LmHead, TimeCategory::Other})
        EXPECT_GT(t[size_t(c)], 0) << time_category_name(c);
    EXPECT_EQ(t[size_t(TimeCategory::Sampling)], 0);

    prof.set_timing(false);
    logits_of(*profiled, prompt);
    EXPECT_EQ(prof.totals(), t);  // nothing measured while off
}

TEST(StepMeter, CategoriesNeverExceedTheStepsWallTime) {
    const auto path = tiny_model();
    cpu::CpuBackend inner(1);
    ProfilingBackend prof(inner);
    auto m = Model::load(path, prof);
    StepMeter meter(prof, std::chrono::steady_clock::now());
    const std::vector<int32_t> prompt = {1, 2, 3};
    logits_of(*m, prompt);
    EXPECT_GT(meter.backend_ns_in_step(), 0);
    const StepEvent s = meter.close(3, 0, StepPhase::Prefill, 3, true);
    EXPECT_EQ(s.run, 3u);
    int64_t sum = 0;
    for (int64_t v : s.op_ns) {
        EXPECT_GE(v, 0);
        sum += v;
    }
    EXPECT_EQ(sum, s.end_ns - s.start_ns);  // Sampling is the remainder
    EXPECT_GT(s.op_ns[size_t(TimeCategory::Matmul)], 0);
    EXPECT_EQ(meter.backend_ns_in_step(), 0);  // the next step starts empty
    const StepEvent next = meter.close(3, 1, StepPhase::Decode, 1, false);
    EXPECT_EQ(next.start_ns, s.end_ns);
    for (int64_t v : next.op_ns) EXPECT_EQ(v, 0);
}

TEST(TimeCategory, NamesRoundTrip) {
    for (size_t i = 0; i < kTimeCategories; ++i) {
        const auto c = TimeCategory(int(i));
        EXPECT_EQ(parse_time_category(time_category_name(c)), c);
    }
    EXPECT_FALSE(parse_time_category("flops").has_value());
    EXPECT_EQ(parse_telemetry_level("full"), TelemetryLevel::Full);
    EXPECT_FALSE(parse_telemetry_level("verbose").has_value());
}

}  // namespace
}  // namespace fluoro
