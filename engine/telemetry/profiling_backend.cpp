#include "telemetry/profiling_backend.h"

#include <algorithm>

namespace fluoro {

OpSpan ProfilingBackend::span_of(const Traced& t, OpCategory c, int64_t start_ns, int64_t end_ns) {
    OpSpan op;
    op.start_ns = start_ns;
    op.end_ns = end_ns;
    op.name = t.name;
    op.layer = t.layer;
    op.rows = t.rows;
    op.category = time_category(c);
    op.bytes = t.bytes;
    op.flops = t.flops;
    op.weight_type = t.weight_type;
    op.shape = t.shape;
    return op;
}

ProfilingBackend::Scope::Scope(ProfilingBackend& b, OpCategory c, Traced t)
    : b_(b), slot_(b.timing() ? &b.totals_[size_t(time_category(c))] : nullptr), cat_(c), t_(t) {
    if (!slot_) return;
    if (DeviceClock* clock = b_.inner_.device_clock()) {
        if (clock->marks() == 0) {  // the first op since a read: anchor the device clock
            // Read before the mark passes: a device time mapped through the anchor is never
            // later than the host time it happened at (earlier by the mark's queueing latency).
            b_.inner_.synchronize();
            b_.anchor_ns_ = std::chrono::steady_clock::now().time_since_epoch().count();
            clock->mark();
        }
        begin_mark_ = clock->mark();
        clock_ = clock;
        return;
    }
    b_.inner_.synchronize();
    start_ = std::chrono::steady_clock::now();
}

ProfilingBackend::Scope::~Scope() {
    if (!slot_) return;
    const bool traced = t_.name >= 0 && b_.tracing_;
    if (clock_) {
        try {
            const int32_t end = clock_->mark();
            Pending p{t_, cat_, begin_mark_, end};
            if (!traced) p.t.name = -1;
            b_.pending_.push_back(p);
        } catch (...) {  // the device refused the mark (or no memory): this op's time is lost
        }
        return;
    }
    try {
        b_.inner_.synchronize();
    } catch (...) {  // a failed kernel is reported by the next call that checks; not here
    }
    const auto end = std::chrono::steady_clock::now();
    *slot_ += std::chrono::duration_cast<std::chrono::nanoseconds>(end - start_).count();
    if (!traced) return;
    try {
        b_.ops_.push_back(
            span_of(t_, cat_, start_.time_since_epoch().count(), end.time_since_epoch().count()));
    } catch (...) {  // out of memory for the trace: the op ran; its span is lost
    }
}

void ProfilingBackend::settle() const {
    DeviceClock* clock = inner_.device_clock();
    if (!clock || clock->marks() == 0) return;
    bool read = false;
    try {
        marks_ns_.resize(size_t(clock->marks()));
        clock->elapsed_ns(marks_ns_);
        read = true;
    } catch (...) {  // the device failed: these ops' times are lost; the failure is reported by
    }                // the call that next checks (an op or read())
    if (read) {
        for (const Pending& p : pending_) {
            const int64_t start = anchor_ns_ + marks_ns_[size_t(p.begin)];
            const int64_t end = anchor_ns_ + marks_ns_[size_t(p.end)];
            totals_[size_t(time_category(p.cat))] += end - start;
            if (p.t.name < 0) continue;
            try {
                ops_.push_back(span_of(p.t, p.cat, start, end));
            } catch (...) {  // out of memory for the trace: the op ran; its span is lost
            }
        }
    }
    pending_.clear();
    clock->reset();
}

ProfilingBackend::~ProfilingBackend() {
    if (workers_) inner_.set_worker_trace(nullptr);
}

void ProfilingBackend::set_tracing(bool on) {
    if (on == tracing_) return;
    if (on && !workers_) workers_ = std::make_unique<WorkerTrace>(inner_.threads());
    if (on && ops_.capacity() == 0) ops_.reserve(4096);
    tracing_ = on;
    inner_.set_worker_trace(on ? workers_.get() : nullptr);
}

int32_t ProfilingBackend::intern(std::string_view name) {
    if (auto it = name_ids_.find(name); it != name_ids_.end()) return it->second;
    const auto id = int32_t(names_.size());
    names_.emplace_back(name);
    name_ids_.emplace(std::string(name), id);
    return id;
}

ProfilingBackend::Traced ProfilingBackend::traced(std::string_view call, int64_t rows,
                                                  int64_t width) {
    if (!tracing_ || !timing()) return {};
    Traced t;
    t.name = intern(call);
    t.layer = layer_;
    t.rows = int32_t(rows);
    t.shape = {int32_t(width), 0};
    return t;
}

template <class WeightAt>
ProfilingBackend::Traced ProfilingBackend::traced(std::string_view prefix, size_t n,
                                                  WeightAt weight, int64_t rows) {
    if (!tracing_ || !timing() || n == 0) return {};
    const WeightOpKey key{prefix.data(), weight(0).data, n};
    auto it = weight_ops_.find(key);
    if (it == weight_ops_.end()) {
        std::string name;
        int32_t layer = -1;
        for (size_t i = 0; i < n; ++i) {
            const TensorOpName t = tensor_op_name(weight(i).name);
            if (i > 0) name += '+';
            name += t.op;
            layer = t.layer;
        }
        if (!prefix.empty()) name = std::string(prefix) + "(" + name + ")";
        it = weight_ops_.emplace(key, std::pair{intern(name), layer}).first;
    }
    layer_ = it->second.second;
    Traced t;
    t.name = it->second.first;
    t.layer = layer_;
    t.rows = int32_t(rows);
    t.shape = {int32_t(weight(0).n_in()), 0};
    return t;
}

ProfilingBackend::Traced ProfilingBackend::traced(std::string_view prefix, const Weight& w,
                                                  int64_t rows) {
    return traced(
        prefix, 1, [&w](size_t) -> const Weight& { return w; }, rows);
}

std::shared_ptr<StepTrace> ProfilingBackend::take_trace(int64_t run_start_ns) {
    settle();
    auto t = std::make_shared<StepTrace>();
    t->names = names_;
    t->ops = std::move(ops_);
    ops_ = {};
    if (tracing_) ops_.reserve(std::max<size_t>(t->ops.size(), 64));
    for (OpSpan& op : t->ops) {
        op.start_ns -= run_start_ns;
        op.end_ns -= run_start_ns;
    }
    t->threads = int32_t(inner_.threads());
    if (workers_) {
        t->dropped = workers_->drain(t->workers);
        for (WorkerBusy& w : t->workers) {
            w.start_ns -= run_start_ns;
            w.end_ns -= run_start_ns;
        }
    }
    layer_ = -1;
    return t;
}

void ProfilingBackend::discard_trace() {
    settle();  // the times still count in totals(); only the spans are dropped
    ops_.clear();
    if (workers_) {
        std::vector<WorkerBusy> stale;  // spans of no step
        workers_->drain(stale);
    }
    layer_ = -1;
}

Weight ProfilingBackend::load_weight(const gguf::GgufFile& file, const gguf::TensorInfo& info) {
    Weight w = inner_.load_weight(file, info);
    weights_bytes_ += int64_t(w.row_bytes) * w.ne[1] * w.ne[2] * w.ne[3];
    return w;
}

std::unique_ptr<KvCache> ProfilingBackend::create_kv(const KvShape& shape) {
    return inner_.create_kv(shape);
}

Act ProfilingBackend::alloc_act(int64_t rows, int64_t width) {
    Act a = inner_.alloc_act(rows, width);
    scratch_bytes_ += a.size() * int64_t(sizeof(float));
    return a;
}

void ProfilingBackend::reserve(int64_t max_tokens, int64_t max_width) {
    inner_.reserve(max_tokens, max_width);
}

void ProfilingBackend::get_rows(const Weight& table, std::span<const int32_t> ids, Act y) {
    Scope s(*this, OpCategory::Other, traced("get_rows", table, int64_t(ids.size())));
    inner_.get_rows(table, ids, y);
}

std::pair<double, double> ProfilingBackend::count_matmul(const Weight& w, int64_t rows,
                                                         OpCategory cat) {
    if (!timing()) return {0, 0};
    const size_t c = size_t(time_category(cat));
    const double bytes = double(w.row_bytes) * double(w.n_out());
    const double flops = 2.0 * double(w.n_in()) * double(w.n_out()) * double(rows);
    traffic_.bytes[c] += bytes;
    traffic_.flops[c] += flops;
    return {bytes, flops};
}

void ProfilingBackend::matmul(const Weight& w, const Act& x, Act y, OpCategory cat) {
    const auto [bytes, flops] = count_matmul(w, x.rows, cat);
    // The LM head is named as such whatever its weight ("lm_head(output)", or "lm_head(token_embd)"
    // when tied to the embedding); the other matmuls by their weight alone.
    Traced t = cat == OpCategory::LmHead ? traced("lm_head", w, x.rows) : traced("", w, x.rows);
    t.bytes = bytes;
    t.flops = flops;
    t.weight_type = int32_t(w.type);
    t.shape = {int32_t(w.n_in()), int32_t(w.n_out())};
    Scope s(*this, cat, t);
    inner_.matmul(w, x, y, cat);
}

void ProfilingBackend::matmul_many(const Act& x, std::span<const MatmulOut> outs, OpCategory cat) {
    double bytes = 0, flops = 0;
    for (const MatmulOut& o : outs) {
        const auto [b, f] = count_matmul(*o.w, x.rows, cat);
        bytes += b;
        flops += f;
    }
    Traced t = traced(
        "", outs.size(), [outs](size_t i) -> const Weight& { return *outs[i].w; }, x.rows);
    if (t.name >= 0) {
        t.bytes = bytes;
        t.flops = flops;
        t.weight_type = int32_t(outs[0].w->type);
        int64_t n_out = 0;
        for (const MatmulOut& o : outs) n_out += o.w->n_out();
        t.shape = {int32_t(outs[0].w->n_in()), int32_t(n_out)};
    }
    Scope s(*this, cat, t);
    inner_.matmul_many(x, outs, cat);
}

void ProfilingBackend::rope_qk(Act q, int64_t n_head_q, Act k, int64_t n_head_k, int64_t head_dim,
                               const RopeParams& p, std::span<const int32_t> positions) {
    Scope s(*this, OpCategory::NormRope, traced("rope_qk", q.rows, q.width));
    inner_.rope_qk(q, n_head_q, k, n_head_k, head_dim, p, positions);
}

void ProfilingBackend::add_rms_norm(Act x, const Act& y, const Weight& w, float eps, Act out) {
    Scope s(*this, OpCategory::NormRope, traced("add_rms_norm", w, x.rows));
    inner_.add_rms_norm(x, y, w, eps, out);
}

void ProfilingBackend::add_bias(Act y, const Weight& bias) {
    Scope s(*this, OpCategory::Other, traced("add_bias", bias, y.rows));
    inner_.add_bias(y, bias);
}

void ProfilingBackend::rms_norm(const Act& x, const Weight& w, float eps, Act y) {
    Scope s(*this, OpCategory::NormRope, traced("rms_norm", w, x.rows));
    inner_.rms_norm(x, w, eps, y);
}

void ProfilingBackend::rope(Act x, int64_t n_head, int64_t head_dim, const RopeParams& p,
                            std::span<const int32_t> positions) {
    Scope s(*this, OpCategory::NormRope, traced("rope", x.rows, x.width));
    inner_.rope(x, n_head, head_dim, p, positions);
}

void ProfilingBackend::attention(const AttentionParams& p, const Act& q, const Act& k, const Act& v,
                                 const Batch& batch, KvCache& kv, Act out) {
    Traced op = traced("attention", batch.size(), 0);
    if (tracing_ && timing()) layer_ = op.layer = int32_t(p.layer);
    if (timing() && batch.size() > 0) {
        int64_t keys = 0, key_flops = 0;  // rows read once per call; q·k and p·v per query
        for (int64_t t = 0; t < batch.size(); ++t) {
            const int64_t pos = batch.positions[size_t(t)];
            const int64_t seen = p.window > 0 ? std::min<int64_t>(pos + 1, p.window) : pos + 1;
            keys = std::max(keys, seen);
            key_flops += seen;
        }
        const KvShape& sh = kv.shape();
        const size_t c = size_t(TimeCategory::Attention);
        op.shape = {int32_t(keys), int32_t(p.n_head)};
        op.bytes = double(keys) * double(sh.k_row_bytes(p.layer) + sh.v_stored_row_bytes(p.layer));
        op.flops = 2.0 * double(key_flops) * double(p.n_head) * double(p.head_dim_k + p.head_dim_v);
        traffic_.bytes[c] += op.bytes;
        traffic_.flops[c] += op.flops;
    }
    Scope s(*this, OpCategory::Attention, op);
    inner_.attention(p, q, k, v, batch, kv, out);
}

void ProfilingBackend::add(Act x, const Act& y) {
    Scope s(*this, OpCategory::Other, traced("add", x.rows, x.width));
    inner_.add(x, y);
}

void ProfilingBackend::scale(Act x, float f) {
    Scope s(*this, OpCategory::Other, traced("scale", x.rows, x.width));
    inner_.scale(x, f);
}

void ProfilingBackend::swiglu(Act gate, const Act& up) {
    Scope s(*this, OpCategory::Ffn, traced("swiglu", gate.rows, gate.width));
    inner_.swiglu(gate, up);
}

void ProfilingBackend::swiglu_oai(Act gate, const Act& up, float alpha, float limit) {
    Scope s(*this, OpCategory::Ffn, traced("swiglu_oai", gate.rows, gate.width));
    inner_.swiglu_oai(gate, up, alpha, limit);
}

void ProfilingBackend::geglu_tanh(Act gate, const Act& up) {
    Scope s(*this, OpCategory::Ffn, traced("geglu_tanh", gate.rows, gate.width));
    inner_.geglu_tanh(gate, up);
}

void ProfilingBackend::softcap(Act x, float cap) {
    Scope s(*this, OpCategory::Other, traced("softcap", x.rows, x.width));
    inner_.softcap(x, cap);
}

void ProfilingBackend::gather_rows(const Act& x, std::span<const int32_t> rows, Act y) {
    Scope s(*this, OpCategory::Other, traced("gather_rows", y.rows, y.width));
    inner_.gather_rows(x, rows, y);
}

void ProfilingBackend::copy_blocks(const Act& x, Act y, const BlockCopy& c) {
    Scope s(*this, OpCategory::Other, traced("copy_blocks", y.rows, c.n_blocks * c.width));
    inner_.copy_blocks(x, y, c);
}

void ProfilingBackend::add_rows_scaled(Act x, Act y, std::span<const int32_t> rows,
                                       std::span<const float> scales) {
    Scope s(*this, OpCategory::Ffn, traced("add_rows_scaled", y.rows, y.width));
    inner_.add_rows_scaled(x, y, rows, scales);
}

void ProfilingBackend::read(const Act& x, std::span<float> host) {
    Scope s(*this, OpCategory::Other, traced("read", x.rows, x.width));
    inner_.read(x, host);
}

}  // namespace fluoro
