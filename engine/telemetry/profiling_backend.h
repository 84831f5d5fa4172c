// A Backend decorator that measures: it forwards every call to the backend it wraps and, while
// timing is on, adds the steady_clock time of each operation to its category (matmul passes its
// own; attention -> Attention; rms_norm, rope -> NormRope; swiglu(_oai), geglu, add_rows_scaled ->
// Ffn; the rest -> Other). A synchronous backend's (the CPU's) call is timed by the host clock
// around it; an asynchronous one's (CUDA) by the backend's own device clock (backend/
// device_clock.h: marks queued before and after the call, read when the times are next asked
// for), so timing waits for the device once per step, not twice per op. It also counts the bytes of
// the weights and activation buffers allocated through it. The model is built on the decorator
// (Model::load takes any Backend&), so the kernels and the architectures stay untouched. Used from
// the engine thread only, like the backend it wraps; only set_timing() may be called from
// elsewhere.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "backend/backend.h"
#include "telemetry/op_trace.h"
#include "telemetry/time_category.h"

namespace fluoro {

class ProfilingBackend final : public Backend {
  public:
    explicit ProfilingBackend(Backend& inner) : inner_(inner) {}
    ~ProfilingBackend() override;
    ProfilingBackend(const ProfilingBackend&) = delete;
    ProfilingBackend& operator=(const ProfilingBackend&) = delete;

    Backend& inner() const { return inner_; }
    void set_timing(bool on) { timing_.store(on, std::memory_order_relaxed); }
    bool timing() const { return timing_.load(std::memory_order_relaxed); }
    // Nanoseconds per category since construction (Sampling always 0: not a backend category).
    // On a device clock, the ops queued since the last read are read first (a wait for the
    // device).
    const CategoryTimes& totals() const {
        settle();
        return totals_;
    }
    // While timing: per category, the bytes the operations must at least read from memory — each
    // matmul's whole weight once per call, each attention call's KV rows up to the furthest
    // position its batch attends to (the window's when it has one) — and the floating-point
    // operations they do (2 per multiply-add). Activations, which stay in cache, are not counted.
    // The roofline of `fluoro profile` (app/cli/cmd_profile.cpp) divides them by the times.
    struct Traffic {
        std::array<double, kTimeCategories> bytes{}, flops{};
    };
    const Traffic& traffic() const { return traffic_; }

    // Tracing (telemetry level Trace; implies timing): every timed call also records an OpSpan
    // (telemetry/op_trace.h) into a buffer reserved ahead (take_trace moves it out and reserves
    // the next at the size it reached), and the inner backend's host pool records its workers'
    // busy spans (backend/worker_trace.h). Engine thread only.
    void set_tracing(bool on);
    bool tracing() const { return tracing_; }
    // The spans recorded since the last take (the op names table whole), their steady_clock
    // times made run-relative by subtracting run_start_ns (steady_clock since its epoch); the
    // buffer starts empty again. The layer of the ops that follow restarts unknown (-1).
    std::shared_ptr<StepTrace> take_trace(int64_t run_start_ns);
    // Drops what was recorded since the last take.
    void discard_trace();
    int64_t weights_bytes() const { return weights_bytes_; }
    int64_t scratch_bytes() const { return scratch_bytes_; }

    std::string_view name() const override { return inner_.name(); }
    int threads() const override { return inner_.threads(); }
    size_t attention_scratch_bytes() const override { return inner_.attention_scratch_bytes(); }
    Weight load_weight(const gguf::GgufFile& file, const gguf::TensorInfo& info) override;
    std::unique_ptr<KvCache> create_kv(const KvShape& shape) override;
    Act alloc_act(int64_t rows, int64_t width) override;
    void reserve(int64_t max_tokens, int64_t max_width) override;

    void get_rows(const Weight& table, std::span<const int32_t> ids, Act y) override;
    void matmul(const Weight& w, const Act& x, Act y, OpCategory cat) override;
    void rope_qk(Act q, int64_t n_head_q, Act k, int64_t n_head_k, int64_t head_dim,
                 const RopeParams& p, std::span<const int32_t> positions) override;
    void add_rms_norm(Act x, const Act& y, const Weight& w, float eps, Act out) override;
    void matmul_many(const Act& x, std::span<const MatmulOut> outs, OpCategory cat) override;
    void add_bias(Act y, const Weight& bias) override;
    void rms_norm(const Act& x, const Weight& w, float eps, Act y) override;
    void rope(Act x, int64_t n_head, int64_t head_dim, const RopeParams& p,
              std::span<const int32_t> positions) override;
    void attention(const AttentionParams& p, const Act& q, const Act& k, const Act& v,
                   const Batch& batch, KvCache& kv, Act out) override;
    void set_attention_impl(AttentionImpl impl) override { inner_.set_attention_impl(impl); }
    AttentionImpl attention_impl() const override { return inner_.attention_impl(); }
    void set_attention_capture(AttentionCapture* c) override { inner_.set_attention_capture(c); }
    std::span<const float> attention_key_scores(int64_t layer, int64_t kv_head,
                                                int64_t seq) const override {
        return inner_.attention_key_scores(layer, kv_head, seq);
    }
    void kv_compact(KvCache& kv, int64_t seq, std::span<const int64_t> keep) override {
        inner_.kv_compact(kv, seq, keep);
    }
    void kv_rope_shift(KvCache& kv, int64_t layer, int64_t seq, int64_t begin,
                       std::span<const int32_t> deltas, const RopeParams& p) override {
        inner_.kv_rope_shift(kv, layer, seq, begin, deltas, p);
    }
    void add(Act x, const Act& y) override;
    void scale(Act x, float s) override;
    void swiglu(Act gate, const Act& up) override;
    void swiglu_oai(Act gate, const Act& up, float alpha, float limit) override;
    void geglu_tanh(Act gate, const Act& up) override;
    void softcap(Act x, float cap) override;
    void gather_rows(const Act& x, std::span<const int32_t> rows, Act y) override;
    void copy_blocks(const Act& x, Act y, const BlockCopy& c) override;
    void add_rows_scaled(Act x, Act y, std::span<const int32_t> rows,
                         std::span<const float> scales) override;
    void read(const Act& x, std::span<float> host) override;
    void synchronize() override { inner_.synchronize(); }
    // The inner backend's device clock is the profiler's own (not shared: device_clock() stays
    // nullptr here).

  private:
    // What a traced op is: its interned name, layer, rows, bytes and FLOPs (name -1: untraced).
    struct Traced {
        int32_t name = -1, layer = -1, rows = 0;
        double bytes = 0, flops = 0;
        int32_t weight_type = -1;
        std::array<int32_t, 2> shape{0, 0};
    };
    // The span of a traced op that ran from start_ns to end_ns.
    static OpSpan span_of(const Traced& t, OpCategory c, int64_t start_ns, int64_t end_ns);
    // A matmul's bytes and FLOPs, added to traffic_ (while timing) and returned.
    std::pair<double, double> count_matmul(const Weight& w, int64_t rows, OpCategory cat);
    int32_t intern(std::string_view name);
    // While tracing: a plain op (named after the call, in the current layer), or an op on n
    // weights (weight(i), i < n) named after them — "rms_norm(attn_norm)" with prefix
    // "rms_norm", a matmul's bare ("ffn_down"), a fused one's joined ("attn_q+attn_k+attn_v") —
    // parsed once per (prefix, first weight, n), which sets the current layer (the last
    // weight's); untraced (name -1) otherwise.
    Traced traced(std::string_view call, int64_t rows, int64_t width);
    template <class WeightAt>
    Traced traced(std::string_view prefix, size_t n, WeightAt weight, int64_t rows);
    Traced traced(std::string_view prefix, const Weight& w, int64_t rows);
    // Times one forwarded call into a category when timing is on; a no-op otherwise. Without a
    // device clock, an asynchronous backend would be synchronized before and after the call so
    // the host time is the op's own; with one (CUDA), a mark is queued before and after it and
    // the op waits in pending_ until settle() reads the marks. The first mark after a read
    // follows a synchronize(): it is taken with the queue empty, so it passes at once and the
    // host time then read anchors the device times to the host clock (one wait per step).
    class Scope {
      public:
        Scope(ProfilingBackend& b, OpCategory c, Traced t);
        ~Scope();
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

      private:
        ProfilingBackend& b_;
        int64_t* slot_;
        OpCategory cat_;
        Traced t_;
        std::chrono::steady_clock::time_point start_;
        DeviceClock* clock_ = nullptr;
        int32_t begin_mark_ = -1;
    };
    // An op timed on the device clock, waiting for its marks to be read.
    struct Pending {
        Traced t;
        OpCategory cat;
        int32_t begin, end;  // its marks
    };
    // Reads the device clock's marks (waiting for the device) and moves the pending ops into
    // totals_ and, when traced, ops_; nothing to do without pending marks. The marks lost to a
    // device failure drop their ops' times (the failure itself is the next op's or read()'s to
    // report).
    void settle() const;

    Backend& inner_;
    std::atomic<bool> timing_{true};
    // Mutable: settle() is const, as totals() is to its readers (engine thread only).
    mutable CategoryTimes totals_{};
    mutable std::vector<Pending> pending_;
    mutable std::vector<int64_t> marks_ns_;  // settle()'s reading, kept for its capacity
    mutable int64_t anchor_ns_ = 0;          // steady_clock at the device clock's mark 0
    Traffic traffic_{};
    int64_t weights_bytes_ = 0;
    int64_t scratch_bytes_ = 0;

    struct NameHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    bool tracing_ = false;
    int32_t layer_ = -1;              // the current op's layer (the last weight's)
    std::vector<std::string> names_;  // interned op names, index = OpSpan::name
    std::unordered_map<std::string, int32_t, NameHash, std::equal_to<>> name_ids_;
    // (the prefix literal's address, the first weight's data, the weight count) -> (name,
    // layer): an op's name is parsed once.
    struct WeightOpKey {
        const void* prefix;
        const void* weight;
        size_t n;
        bool operator==(const WeightOpKey&) const = default;
    };
    struct WeightOpHash {
        size_t operator()(const WeightOpKey& k) const {
            const std::hash<const void*> h;
            return (h(k.prefix) * 31 ^ h(k.weight)) * 31 ^ k.n;
        }
    };
    std::unordered_map<WeightOpKey, std::pair<int32_t, int32_t>, WeightOpHash> weight_ops_;
    mutable std::vector<OpSpan> ops_;
    std::unique_ptr<WorkerTrace> workers_;
};

}  // namespace fluoro
