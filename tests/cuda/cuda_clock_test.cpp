// The CUDA backend's device clock (CUDA events, backend/cuda/cuda_clock.h) and profiling on it
// (telemetry level Full and Trace time each op by marks queued around it, not by waiting for the
// GPU after every call): the marks read back in stream order, never decreasing, with queued work
// between them; a traced prefill of the tiny llama records every op in order inside the step's
// host time, per category adding up to the step's split. Skipped without a GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "core/error.h"
#include "cuda_test_support.h"
#include "decode/sequence.h"
#include "gguf/test_model.h"
#include "model/model.h"
#include "telemetry/profiling_backend.h"
#include "telemetry/step_meter.h"
#include "test_temp.h"

namespace fluoro::cuda {
namespace {

class CudaClockTest : public test::CudaTest<> {};

TEST_F(CudaClockTest, MarksReadBackInStreamOrderWithTheWorkBetweenThem) {
    CudaBackend b;
    DeviceClock* clock = b.device_clock();
    ASSERT_NE(clock, nullptr);
    EXPECT_EQ(clock, b.device_clock());  // one clock per backend
    Act x = b.alloc_act(1024, 4096);     // 16 MiB
    EXPECT_EQ(clock->mark(), 0);
    for (int i = 0; i < 50; ++i) b.scale(x, 1.0f);
    EXPECT_EQ(clock->mark(), 1);
    EXPECT_EQ(clock->mark(), 2);
    EXPECT_EQ(clock->marks(), 3);
    std::vector<int64_t> wrong(2);
    EXPECT_THROW(clock->elapsed_ns(wrong), Error);
    std::vector<int64_t> ns(3);
    clock->elapsed_ns(ns);
    EXPECT_EQ(ns[0], 0);
    // 50 passes reading and writing 16 MiB move 1.68 GB; no GPU moves that in under 100 us
    // (16.8 TB/s, several times an H200's 4.8 TB/s).
    EXPECT_GT(ns[1], 100'000);
    EXPECT_GE(ns[2], ns[1]);
    clock->reset();
    EXPECT_EQ(clock->marks(), 0);
    EXPECT_EQ(clock->mark(), 0);  // the events are reused
    ns.resize(1);
    clock->elapsed_ns(ns);
    EXPECT_EQ(ns[0], 0);
}

TEST_F(CudaClockTest, ATracedPrefillTimesEveryOpInOrderInsideTheStep) {
    const auto path = fluoro::test::unique_temp_path("cuda_clock_tiny.gguf");
    gguf::TestModelSpec spec;
    spec.weight_type = GgmlType::Q8_0;
    gguf::write_test_model(path, spec);
    CudaBackend inner;
    ProfilingBackend prof(inner);
    auto m = Model::load(path, prof);
    const std::vector<int32_t> prompt = {1, 5, 9, 42, 7, 3, 8, 11};
    auto prefill = [&] {
        auto kv = m->create_kv(64, 1, KvType::F16);
        Sequence seq(*m, *kv, 0);
        (void)seq.prefill(prompt);
    };
    prefill();  // warm-up, untraced
    prof.set_tracing(true);
    prof.discard_trace();
    StepMeter meter(prof, std::chrono::steady_clock::now());
    const CategoryTimes before = prof.totals();
    prefill();
    const StepEvent step = meter.close(1, 0, StepPhase::Prefill, int64_t(prompt.size()), true);
    EXPECT_EQ(inner.device_clock()->marks(), 0);  // read when the step closed
    const std::shared_ptr<StepTrace> t = prof.take_trace(meter.run_start_ns());
    ASSERT_GT(t->ops.size(), 10u);
    EXPECT_TRUE(step_trace_error(*t).empty()) << step_trace_error(*t);
    EXPECT_EQ(t->name_of(t->ops.front()), "get_rows(token_embd)");
    CategoryTimes sum{};
    int attention = 0;
    for (size_t i = 0; i < t->ops.size(); ++i) {
        const OpSpan& op = t->ops[i];
        // Device times anchored at a host reading taken before the first mark was queued: never
        // later than when they happened, so inside the step.
        EXPECT_GE(op.start_ns, step.start_ns) << i;
        EXPECT_LE(op.end_ns, step.end_ns) << i;
        EXPECT_LE(op.start_ns, op.end_ns) << i;
        if (i > 0) {
            EXPECT_GE(op.start_ns, t->ops[i - 1].end_ns) << i;  // one stream: no overlap
        }
        sum[size_t(op.category)] += op.end_ns - op.start_ns;
        attention += t->name_of(op) == "attention";
    }
    EXPECT_EQ(attention, int(spec.n_layer));
    for (size_t c = 0; c < kTimeCategories; ++c) {
        if (c == size_t(TimeCategory::Sampling)) continue;
        EXPECT_EQ(sum[c], prof.totals()[c] - before[c]) << c;
        EXPECT_EQ(sum[c], step.op_ns[c]) << c;
    }
}

}  // namespace
}  // namespace fluoro::cuda
