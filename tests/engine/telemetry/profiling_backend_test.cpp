// The profiling decorator changes no result, times every operation category the forward pass
// uses while timing is on and nothing while it is off; the step meter splits a step's wall time
// without ever exceeding it; on a backend with a device clock the ops are timed by its marks, with
// one wait for the device per step instead of two per op.
#include "telemetry/profiling_backend.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
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

// Tracing a prefill of the tiny llama (2 layers) on two threads: one span per backend call, in
// order and never overlapping, each layer's ops under its layer number with the embedding before
// and the LM head after; per category the spans add up to the category's time to the nanosecond
// (both come from the same clock readings); a matmul's bytes are its weight's; the pool's spans
// lie inside the ops (which workers ran tasks depends on scheduling: on a loaded machine the
// caller may take every task before the other worker wakes; thread_pool_test.cpp forces both).
TEST(ProfilingBackend, TracingRecordsEveryCallInOrderWithItsLayer) {
    const auto path = tiny_model();
    cpu::CpuBackend inner(2);
    ProfilingBackend prof(inner);
    auto m = Model::load(path, prof);
    const std::vector<int32_t> prompt = {1, 5, 9, 42, 7, 3, 8, 11};
    logits_of(*m, prompt);  // warm-up, untraced
    prof.set_tracing(true);
    prof.discard_trace();
    const CategoryTimes before = prof.totals();
    const double bytes_before = prof.traffic().bytes[size_t(TimeCategory::Matmul)];
    logits_of(*m, prompt);
    const std::shared_ptr<StepTrace> t = prof.take_trace(0);
    ASSERT_FALSE(t->ops.empty());
    EXPECT_EQ(t->threads, 2);
    EXPECT_TRUE(step_trace_error(*t).empty()) << step_trace_error(*t);

    CategoryTimes sum{};
    double matmul_bytes = 0;
    std::vector<int32_t> layers;
    int attention = 0;
    for (size_t i = 0; i < t->ops.size(); ++i) {
        const OpSpan& op = t->ops[i];
        if (i > 0) {
            EXPECT_GE(op.start_ns, t->ops[i - 1].end_ns) << i;
        }
        sum[size_t(op.category)] += op.end_ns - op.start_ns;
        if (op.category == TimeCategory::Matmul) matmul_bytes += op.bytes;
        if (layers.empty() || layers.back() != op.layer) layers.push_back(op.layer);
        if (t->name_of(op) == "attention") {
            EXPECT_EQ(op.layer, attention++);
            EXPECT_GT(op.bytes, 0);
            EXPECT_GT(op.flops, 0);
            EXPECT_EQ(op.rows, int32_t(prompt.size()));
        }
        EXPECT_GE(op.rows, 1) << t->name_of(op);
    }
    EXPECT_EQ(attention, 2);
    EXPECT_EQ(layers, (std::vector<int32_t>{-1, 0, 1, -1}));
    EXPECT_EQ(t->name_of(t->ops.front()), "get_rows(token_embd)");
    bool lm_head = false;
    for (const OpSpan& op : t->ops) lm_head |= t->name_of(op).starts_with("lm_head(");
    EXPECT_TRUE(lm_head);
    for (size_t c = 0; c < kTimeCategories; ++c) EXPECT_EQ(sum[c], prof.totals()[c] - before[c]);
    EXPECT_DOUBLE_EQ(matmul_bytes,
                     prof.traffic().bytes[size_t(TimeCategory::Matmul)] - bytes_before);

    std::set<int32_t> workers;
    for (const WorkerBusy& w : t->workers) {
        workers.insert(w.worker);
        EXPECT_TRUE(w.worker == 0 || w.worker == 1) << w.worker;
        EXPECT_GE(w.start_ns, t->ops.front().start_ns);
        EXPECT_LE(w.start_ns, w.end_ns);
        if (w.worker == 0) {
            EXPECT_LE(w.end_ns, t->ops.back().end_ns);
        }
    }
    EXPECT_TRUE(workers.count(0));  // the caller always runs tasks of its own regions

    // Off: nothing more is recorded, the pool's spans included.
    prof.set_tracing(false);
    logits_of(*m, prompt);
    const std::shared_ptr<StepTrace> none = prof.take_trace(0);
    EXPECT_TRUE(none->ops.empty());
    EXPECT_TRUE(none->workers.empty());
}

// A device clock whose marks are scripted: mark i passes at i microseconds after mark 0, as if
// the device took exactly 1 us from one mark to the next. Counts its reads; can be told to fail.
class ScriptedClock final : public DeviceClock {
  public:
    int32_t mark() override {
        if (fail_mark) throw Error("scripted clock: mark refused");
        return used_++;
    }
    int32_t marks() const override { return used_; }
    void elapsed_ns(std::span<int64_t> ns) override {
        ++reads;
        if (fail_read) throw Error("scripted clock: the device failed");
        for (size_t i = 0; i < ns.size(); ++i) ns[i] = int64_t(i) * 1000;
    }
    void reset() override { used_ = 0; }

    int reads = 0;
    bool fail_mark = false, fail_read = false;

  private:
    int32_t used_ = 0;
};

// The CPU backend dressed as an asynchronous one: the scripted clock is its device clock and its
// synchronize() calls are counted (the CPU's work is done when a call returns, so the results are
// the CPU's).
class ClockedCpu final : public cpu::CpuBackend {
  public:
    ClockedCpu() : cpu::CpuBackend(1) {}
    DeviceClock* device_clock() override { return &clock; }
    void synchronize() override { ++syncs; }

    ScriptedClock clock;
    int syncs = 0;
};

// Every op is timed by its two marks (so each lasts 1 us and the next starts 1 us after it ends:
// the scripted device's gaps), read once when the times are asked for; the device is waited for
// once in the step (to anchor the clock), where host timing would wait twice per op.
TEST(ProfilingBackend, ADeviceClockTimesEachOpByItsMarksWithOneWaitPerStep) {
    const auto path = tiny_model();
    const std::vector<int32_t> prompt = {1, 5, 9, 42, 7};
    cpu::CpuBackend plain_cpu(1);
    auto plain = Model::load(path, plain_cpu);
    ClockedCpu inner;
    ProfilingBackend prof(inner);
    auto m = Model::load(path, prof);
    prof.set_tracing(true);
    prof.discard_trace();  // the load's ops
    inner.syncs = 0;
    inner.clock.reads = 0;
    StepMeter meter(prof, std::chrono::steady_clock::now());
    const CategoryTimes before = prof.totals();

    EXPECT_EQ(logits_of(*plain, prompt), logits_of(*m, prompt));
    EXPECT_EQ(inner.syncs, 1);
    EXPECT_EQ(inner.clock.reads, 0);  // nothing read until asked
    const StepEvent step = meter.close(1, 0, StepPhase::Prefill, 5, true);
    EXPECT_EQ(inner.clock.reads, 1);
    EXPECT_EQ(inner.clock.marks(), 0);  // read and reset
    const std::shared_ptr<StepTrace> t = prof.take_trace(0);
    ASSERT_GT(t->ops.size(), 10u);
    EXPECT_TRUE(step_trace_error(*t).empty()) << step_trace_error(*t);
    EXPECT_EQ(inner.clock.reads, 1);  // the take found nothing pending
    for (size_t i = 0; i < t->ops.size(); ++i) {
        EXPECT_EQ(t->ops[i].end_ns - t->ops[i].start_ns, 1000) << i;
        if (i > 0) {
            EXPECT_EQ(t->ops[i].start_ns - t->ops[i - 1].end_ns, 1000) << i;
        }
    }
    EXPECT_EQ(t->name_of(t->ops.front()), "get_rows(token_embd)");
    int64_t backend = 0;
    for (size_t c = 0; c < kTimeCategories; ++c) {
        if (c == size_t(TimeCategory::Sampling)) continue;
        EXPECT_EQ(step.op_ns[c], prof.totals()[c] - before[c]) << c;
        backend += step.op_ns[c];
    }
    EXPECT_EQ(backend, int64_t(t->ops.size()) * 1000);

    // Timing off: no marks, no waits.
    prof.set_timing(false);
    logits_of(*m, prompt);
    EXPECT_EQ(inner.clock.marks(), 0);
    EXPECT_EQ(inner.syncs, 1);
}

// A device that fails between the marks and their read loses those ops' times, nothing else: no
// throw from totals(), the next step's ops counted alone; a refused mark fails the op's call as
// any device error does.
TEST(ProfilingBackend, ADeviceClockThatFailsLosesOnlyThoseTimes) {
    const auto path = tiny_model();
    const std::vector<int32_t> prompt = {1, 5, 9};
    ClockedCpu inner;
    ProfilingBackend prof(inner);
    auto m = Model::load(path, prof);
    const CategoryTimes before = prof.totals();
    inner.clock.fail_read = true;
    logits_of(*m, prompt);
    EXPECT_EQ(prof.totals(), before);
    EXPECT_EQ(inner.clock.marks(), 0);
    inner.clock.fail_read = false;
    logits_of(*m, prompt);
    int64_t sum = 0;
    for (size_t c = 0; c < kTimeCategories; ++c) sum += prof.totals()[c] - before[c];
    EXPECT_GT(sum, 0);
    EXPECT_EQ(sum % 1000, 0);  // whole scripted microseconds: only marks were counted

    inner.clock.fail_mark = true;
    EXPECT_THROW(logits_of(*m, prompt), Error);
}

TEST(OpTrace, TensorNamesGiveLayerAndOp) {
    EXPECT_EQ(tensor_op_name("blk.12.attn_q.weight").layer, 12);
    EXPECT_EQ(tensor_op_name("blk.12.attn_q.weight").op, "attn_q");
    EXPECT_EQ(tensor_op_name("blk.3.attn_q.bias").op, "attn_q.bias");
    EXPECT_EQ(tensor_op_name("output.weight").layer, -1);
    EXPECT_EQ(tensor_op_name("output.weight").op, "output");
    // A stacked tensor's matrices (experts, MLA's heads, split rows) are its one op.
    EXPECT_EQ(tensor_op_name("blk.3.ffn_up_exps.weight[expert 5]").op, "ffn_up_exps");
    EXPECT_EQ(tensor_op_name("blk.3.ffn_up_exps.weight[expert 5]").layer, 3);
    EXPECT_EQ(tensor_op_name("blk.0.attn_k_b.weight[head 15]").op, "attn_k_b");
    EXPECT_EQ(tensor_op_name("blk.0.attn_qkv.weight[rows 0..64)").op, "attn_qkv");
    for (const char* odd : {"blk.x.attn_q.weight", "blk..attn_q", "blk.-1.a", "blk.7"})
        EXPECT_EQ(tensor_op_name(odd).layer, -1) << odd;
}

TEST(WorkerTrace, AFullRingDropsAndCountsWhatItCannotHold) {
    WorkerTrace w(2, 3);
    for (int i = 0; i < 5; ++i) w.record({i, i + 1, 1, 1});
    w.record({7, 8, 0, 0});
    w.record({9, 9, 2, 0});  // no such worker: ignored
    std::vector<WorkerBusy> out;
    EXPECT_EQ(w.drain(out), 2);
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(out[0].start_ns, 7);  // worker 0's ring first
    EXPECT_EQ(out[1].start_ns, 0);
    EXPECT_EQ(out[3].start_ns, 2);
    out.clear();
    w.record({10, 11, 1, 1});  // the drained slots are free again
    EXPECT_EQ(w.drain(out), 0);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].start_ns, 10);
}

TEST(TimeCategory, NamesRoundTrip) {
    for (size_t i = 0; i < kTimeCategories; ++i) {
        const auto c = TimeCategory(int(i));
        EXPECT_EQ(parse_time_category(time_category_name(c)), c);
    }
    EXPECT_FALSE(parse_time_category("flops").has_value());
    EXPECT_EQ(parse_telemetry_level("full"), TelemetryLevel::Full);
    EXPECT_EQ(parse_telemetry_level("trace"), TelemetryLevel::Trace);
    EXPECT_FALSE(parse_telemetry_level("verbose").has_value());
}

}  // namespace
}  // namespace fluoro
