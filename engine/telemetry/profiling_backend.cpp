#include "telemetry/profiling_backend.h"

#include <algorithm>

namespace fluoro {

ProfilingBackend::Scope::Scope(ProfilingBackend& b, OpCategory c)
    : inner_(b.inner_), slot_(b.timing() ? &b.totals_[size_t(time_category(c))] : nullptr) {
    if (!slot_) return;
    inner_.synchronize();
    start_ = std::chrono::steady_clock::now();
}

ProfilingBackend::Scope::~Scope() {
    if (!slot_) return;
    try {
        inner_.synchronize();
    } catch (...) {  // a failed kernel is reported by the next call that checks; not here
    }
    *slot_ += std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::steady_clock::now() - start_)
                  .count();
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
    Scope s(*this, OpCategory::Other);
    inner_.get_rows(table, ids, y);
}

void ProfilingBackend::count_matmul(const Weight& w, int64_t rows, OpCategory cat) {
    if (!timing()) return;
    const size_t c = size_t(time_category(cat));
    traffic_.bytes[c] += double(w.row_bytes) * double(w.n_out());
    traffic_.flops[c] += 2.0 * double(w.n_in()) * double(w.n_out()) * double(rows);
}

void ProfilingBackend::matmul(const Weight& w, const Act& x, Act y, OpCategory cat) {
    count_matmul(w, x.rows, cat);
    Scope s(*this, cat);
    inner_.matmul(w, x, y, cat);
}

void ProfilingBackend::matmul_many(const Act& x, std::span<const MatmulOut> outs, OpCategory cat) {
    for (const MatmulOut& o : outs) count_matmul(*o.w, x.rows, cat);
    Scope s(*this, cat);
    inner_.matmul_many(x, outs, cat);
}

void ProfilingBackend::rope_qk(Act q, int64_t n_head_q, Act k, int64_t n_head_k, int64_t head_dim,
                               const RopeParams& p, std::span<const int32_t> positions) {
    Scope s(*this, OpCategory::NormRope);
    inner_.rope_qk(q, n_head_q, k, n_head_k, head_dim, p, positions);
}

void ProfilingBackend::add_rms_norm(Act x, const Act& y, const Weight& w, float eps, Act out) {
    Scope s(*this, OpCategory::NormRope);
    inner_.add_rms_norm(x, y, w, eps, out);
}

void ProfilingBackend::add_bias(Act y, const Weight& bias) {
    Scope s(*this, OpCategory::Other);
    inner_.add_bias(y, bias);
}

void ProfilingBackend::rms_norm(const Act& x, const Weight& w, float eps, Act y) {
    Scope s(*this, OpCategory::NormRope);
    inner_.rms_norm(x, w, eps, y);
}

void ProfilingBackend::rope(Act x, int64_t n_head, int64_t head_dim, const RopeParams& p,
                            std::span<const int32_t> positions) {
    Scope s(*this, OpCategory::NormRope);
    inner_.rope(x, n_head, head_dim, p, positions);
}

void ProfilingBackend::attention(const AttentionParams& p, const Act& q, const Act& k, const Act& v,
                                 const Batch& batch, KvCache& kv, Act out) {
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
        traffic_.bytes[c] +=
            double(keys) * double(sh.k_row_bytes(p.layer) + sh.v_row_bytes(p.layer));
        traffic_.flops[c] +=
            2.0 * double(key_flops) * double(p.n_head) * double(p.head_dim_k + p.head_dim_v);
    }
    Scope s(*this, OpCategory::Attention);
    inner_.attention(p, q, k, v, batch, kv, out);
}

void ProfilingBackend::add(Act x, const Act& y) {
    Scope s(*this, OpCategory::Other);
    inner_.add(x, y);
}

void ProfilingBackend::scale(Act x, float f) {
    Scope s(*this, OpCategory::Other);
    inner_.scale(x, f);
}

void ProfilingBackend::swiglu(Act gate, const Act& up) {
    Scope s(*this, OpCategory::Ffn);
    inner_.swiglu(gate, up);
}

void ProfilingBackend::swiglu_oai(Act gate, const Act& up, float alpha, float limit) {
    Scope s(*this, OpCategory::Ffn);
    inner_.swiglu_oai(gate, up, alpha, limit);
}

void ProfilingBackend::geglu_tanh(Act gate, const Act& up) {
    Scope s(*this, OpCategory::Ffn);
    inner_.geglu_tanh(gate, up);
}

void ProfilingBackend::softcap(Act x, float cap) {
    Scope s(*this, OpCategory::Other);
    inner_.softcap(x, cap);
}

void ProfilingBackend::gather_rows(const Act& x, std::span<const int32_t> rows, Act y) {
    Scope s(*this, OpCategory::Other);
    inner_.gather_rows(x, rows, y);
}

void ProfilingBackend::add_rows_scaled(Act x, Act y, std::span<const int32_t> rows,
                                       std::span<const float> scales) {
    Scope s(*this, OpCategory::Ffn);
    inner_.add_rows_scaled(x, y, rows, scales);
}

void ProfilingBackend::read(const Act& x, std::span<float> host) {
    Scope s(*this, OpCategory::Other);
    inner_.read(x, host);
}

}  // namespace fluoro
