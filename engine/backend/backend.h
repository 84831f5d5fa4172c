// The seam between the architectures (model/) and the hardware: a Backend owns weights, KV and
// activation memory and implements the forward pass's operations. Architecture code calls one
// virtual method per operation over whole activation matrices (never per element), so the same
// forward function drives the CPU backend (cpu/) and the CUDA one (cuda/, tested against it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "backend/attention_capture.h"
#include "backend/batch.h"
#include "backend/device_clock.h"
#include "backend/rope.h"
#include "backend/tensor_ref.h"
#include "backend/worker_trace.h"
#include "kv/kv_cache.h"

namespace fluoro::gguf {
class GgufFile;
struct TensorInfo;
}  // namespace fluoro::gguf

namespace fluoro {

struct AttentionParams {
    int64_t layer = 0;
    int64_t n_head = 0;
    int64_t n_head_kv = 0;  // n_head / n_head_kv query heads share one KV head (GQA/MQA)
    int64_t head_dim_k = 0;
    int64_t head_dim_v = 0;
    float scale = 1.0f;    // applied to q·k
    int64_t window = 0;    // sliding window (keys with pos > q_pos - window); 0 = full
    float softcap = 0.0f;  // attention logit soft-capping (0 = off)
    // Attention sinks (gpt-oss): one learned logit per query head (an F32 weight of n_head
    // values) that joins each row's softmax denominator without a value of its own, so the row's
    // weights sum to less than 1: out = Σ_j e^{s_j} v_j / (Σ_j e^{s_j} + e^{sink_h}). nullptr:
    // none.
    const Weight* sinks = nullptr;
};

// Blocks of columns copied between two activation matrices of the same rows (Backend::copy_blocks):
// for every row r, block b < n_blocks and j < width,
//   y[r, b * y_stride + y_offset + j] = x[r, b * x_stride + x_offset + j].
// An x_stride of 0 repeats one block of x into every block of y (a key shared by all heads). The
// parts of fused per-head projections: MLA's no-RoPE and RoPE parts of each head
// (model/arch_deepseek2.cpp).
struct BlockCopy {
    int64_t width = 0, n_blocks = 1;
    int64_t x_offset = 0, x_stride = 0;
    int64_t y_offset = 0, y_stride = 0;
};
// Throws Error naming the operation when a block reaches past a row of x or y.
void check_block_copy(const char* backend, const Act& x, const Act& y, const BlockCopy& c);

// Operation categories for profiling (telemetry reports time per category).
enum class OpCategory { Matmul, Attention, NormRope, Ffn, LmHead, Other, Count };

class Backend {
  public:
    virtual ~Backend() = default;
    virtual std::string_view name() const = 0;
    // Host threads the backend computes with (the CPU's pool; 1 for a GPU backend's driver).
    virtual int threads() const { return 1; }
    // While set, the host thread pool records its workers' busy spans into `trace` (telemetry
    // level Trace; backend/worker_trace.h); nullptr stops it. A backend without a pool ignores it.
    virtual void set_worker_trace(WorkerTrace* trace) { (void)trace; }
    // Attention working memory allocated so far, in bytes (it only grows: the peak).
    virtual size_t attention_scratch_bytes() const { return 0; }

    // --- memory ---
    // Makes a GGUF tensor resident (CPU: a zero-copy view into the mapping). Throws
    // UnsupportedError when the backend has no kernel for its type.
    virtual Weight load_weight(const gguf::GgufFile& file, const gguf::TensorInfo& info) = 0;
    virtual std::unique_ptr<KvCache> create_kv(const KvShape& shape) = 0;
    // Activation buffer of rows x width floats, allocated once (at model load / reserve),
    // never inside the decode loop.
    virtual Act alloc_act(int64_t rows, int64_t width) = 0;
    // Prepares per-operation scratch for batches of up to max_tokens rows of up to max_width.
    virtual void reserve(int64_t max_tokens, int64_t max_width) = 0;

    // --- operations (x, y are activation matrices; rows = tokens) ---
    virtual void get_rows(const Weight& table, std::span<const int32_t> ids, Act y) = 0;
    virtual void matmul(const Weight& w, const Act& x, Act y, OpCategory cat) = 0;  // y = x·Wᵀ
    // outs[j].y = x·outs[j].wᵀ for every j: products of one input (q/k/v, gate/up) in one call,
    // so that a backend may fuse them (CUDA: one launch at decode). Same results as one matmul()
    // per output.
    struct MatmulOut {
        const Weight* w = nullptr;
        Act y;
    };
    virtual void matmul_many(const Act& x, std::span<const MatmulOut> outs, OpCategory cat) {
        for (const MatmulOut& o : outs) matmul(*o.w, x, o.y, cat);
    }
    virtual void add_bias(Act y, const Weight& bias) = 0;  // y[r] += bias
    // y = x / rms(x) * w, normalizing each group of w.n_in() values (per row, or per head).
    virtual void rms_norm(const Act& x, const Weight& w, float eps, Act y) = 0;
    virtual void rope(Act x, int64_t n_head, int64_t head_dim, const RopeParams& p,
                      std::span<const int32_t> positions) = 0;
    // rope() of the queries and of the keys (one call, so a backend may do both at once).
    virtual void rope_qk(Act q, int64_t n_head_q, Act k, int64_t n_head_k, int64_t head_dim,
                         const RopeParams& p, std::span<const int32_t> positions) {
        rope(q, n_head_q, head_dim, p, positions);
        rope(k, n_head_k, head_dim, p, positions);
    }
    // Writes k, v (rows = batch tokens) into the cache at each token's (seq, pos), then
    // out = softmax(q·kᵀ·scale + causal/window mask)·v per query head.
    virtual void attention(const AttentionParams& p, const Act& q, const Act& k, const Act& v,
                           const Batch& batch, KvCache& kv, Act out) = 0;

    // --- attention implementation and capture (backend/attention_capture.h) ---
    virtual void set_attention_impl(AttentionImpl impl) = 0;
    virtual AttentionImpl attention_impl() const = 0;
    // From the next attention() call on, serve `capture` (nullptr: capture nothing). The caller
    // keeps it alive and drains its results between forward steps.
    virtual void set_attention_capture(AttentionCapture* capture) = 0;
    // Accumulated attention per key (H2O score) of one layer, KV head and sequence, by position;
    // summed over the query heads of the KV head and over every row whose sparsity was computed
    // (AttentionCapture::stats). Empty when never computed. Positions rewritten by a later step
    // start again from 0.
    virtual std::span<const float> attention_key_scores(int64_t layer, int64_t kv_head,
                                                        int64_t seq) const = 0;

    // --- KV compaction (eviction policies, kv/kv_policy.h) ---
    // KvCache::compact(seq, keep) and the same move of the accumulated key scores.
    virtual void kv_compact(KvCache& kv, int64_t seq, std::span<const int64_t> keep) = 0;
    // Re-rotates cached keys: the K row of slot begin + i of (layer, seq) is rotated by RoPE
    // position deltas[i] (rotations compose, so a key rotated for position a becomes one rotated
    // for a + deltas[i]). Quantized rows are dequantized, rotated and quantized again.
    virtual void kv_rope_shift(KvCache& kv, int64_t layer, int64_t seq, int64_t begin,
                               std::span<const int32_t> deltas, const RopeParams& p) = 0;
    virtual void add(Act x, const Act& y) = 0;  // x += y
    // x += y, then out = rms_norm(x) * w (the residual add and the next norm; out may be y).
    // Same results as add() then rms_norm(); a backend may do both in one pass.
    virtual void add_rms_norm(Act x, const Act& y, const Weight& w, float eps, Act out) {
        add(x, y);
        rms_norm(x, w, eps, out);
    }
    virtual void scale(Act x, float s) = 0;                // x *= s
    virtual void swiglu(Act gate, const Act& up) = 0;      // gate = silu(gate) * up
    virtual void geglu_tanh(Act gate, const Act& up) = 0;  // gate = gelu_tanh(gate) * up
    // gpt-oss's clamped SwiGLU: with g' = min(gate, limit) and u' = clamp(up, -limit, limit),
    // gate = g' · sigmoid(alpha · g') · (u' + 1).
    virtual void swiglu_oai(Act gate, const Act& up, float alpha, float limit) = 0;
    virtual void softcap(Act x, float cap) = 0;  // x = cap * tanh(x / cap)
    virtual void gather_rows(const Act& x, std::span<const int32_t> rows, Act y) = 0;
    // BlockCopy above; x and y do not overlap.
    virtual void copy_blocks(const Act& x, Act y, const BlockCopy& c) = 0;
    // x[rows[i]] += scales[i] * y[i] for every row i of y (rows.size() == scales.size() ==
    // y.rows, the rows distinct): a mixture-of-experts' expert outputs, weighted by the router,
    // added back into the residual rows of the tokens routed to that expert (model/moe_ffn.h).
    // y is scratch: its contents afterwards are unspecified. The default is a scale() and an
    // add() per row (views of one row, so any backend whose Act rows are contiguous runs it).
    virtual void add_rows_scaled(Act x, Act y, std::span<const int32_t> rows,
                                 std::span<const float> scales) {
        check_add_rows_scaled(x, y, rows, scales);
        for (size_t i = 0; i < rows.size(); ++i) {
            const Act yi{y.data + int64_t(i) * y.width, 1, y.width};
            scale(yi, scales[i]);
            add(Act{x.data + int64_t(rows[i]) * x.width, 1, x.width}, yi);
        }
    }
    // Copies an activation matrix to host memory (the logits at the end of a step); returns when
    // the copy is done.
    virtual void read(const Act& x, std::span<float> host) = 0;
    // Waits until every operation queued so far has finished (an asynchronous backend's work is
    // only queued when its call returns; the CPU's is done). Profiling calls it to time ops.
    virtual void synchronize() {}
    // An asynchronous backend's clock on its own queue (backend/device_clock.h), with which
    // profiling times each op without a synchronize() around it; nullptr for a synchronous
    // backend, whose calls the host clock times.
    virtual DeviceClock* device_clock() { return nullptr; }

  protected:
    // add_rows_scaled's contract: throws Error naming what does not match.
    static void check_add_rows_scaled(const Act& x, const Act& y, std::span<const int32_t> rows,
                                      std::span<const float> scales);
};

}  // namespace fluoro
