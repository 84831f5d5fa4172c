// The CPU backend: weights read in place from the memory-mapped GGUF (Q4_1, Q5_0, Q8_0, Q4_K and
// Q6_K matrices copied into interleaved row groups, kernels/interleave.h, where this CPU has a
// kernel), a persistent thread pool, integer dot products on quantized weights (matmul.h), and
// plain float32 elementwise ops. It is the reference every other backend is checked against. Not
// final: a test dresses it as an asynchronous backend with a device clock
// (profiling_backend_test.cpp).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/attention_readout.h"
#include "backend/cpu/cpu_attention.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/thread_pool.h"
#include "backend/cpu/weight_arena.h"

namespace fluoro::cpu {

class CpuBackend : public Backend {
  public:
    explicit CpuBackend(int n_threads);  // n_threads <= 0: ThreadPool::default_threads()

    std::string_view name() const override { return "cpu"; }
    int threads() const override { return pool_.size(); }
    void set_worker_trace(WorkerTrace* trace) override { pool_.set_trace(trace); }
    ThreadPool& pool() { return pool_; }

    Weight load_weight(const gguf::GgufFile& file, const gguf::TensorInfo& info) override;
    std::unique_ptr<KvCache> create_kv(const KvShape& shape) override;
    Act alloc_act(int64_t rows, int64_t width) override;
    void reserve(int64_t max_tokens, int64_t max_width) override;

    void get_rows(const Weight& table, std::span<const int32_t> ids, Act y) override;
    void matmul(const Weight& w, const Act& x, Act y, OpCategory cat) override;
    void matmul_many(const Act& x, std::span<const MatmulOut> outs, OpCategory cat) override;
    void add_bias(Act y, const Weight& bias) override;
    void rms_norm(const Act& x, const Weight& w, float eps, Act y) override;
    void rope(Act x, int64_t n_head, int64_t head_dim, const RopeParams& p,
              std::span<const int32_t> positions) override;
    void attention(const AttentionParams& p, const Act& q, const Act& k, const Act& v,
                   const Batch& batch, KvCache& kv, Act out) override;
    void set_attention_impl(AttentionImpl impl) override { attn_impl_ = impl; }
    AttentionImpl attention_impl() const override { return attn_impl_; }
    void set_attention_capture(AttentionCapture* capture) override { capture_ = capture; }
    std::span<const float> attention_key_scores(int64_t layer, int64_t kv_head,
                                                int64_t seq) const override {
        return key_scores_.get(layer, kv_head, seq);
    }
    void kv_compact(KvCache& kv, int64_t seq, std::span<const int64_t> keep) override;
    void kv_rope_shift(KvCache& kv, int64_t layer, int64_t seq, int64_t begin,
                       std::span<const int32_t> deltas, const RopeParams& p) override;
    // Bytes of attention working memory allocated so far (it only grows: the peak).
    size_t attention_scratch_bytes() const override { return attn_scratch_.bytes(); }
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

  private:
    ThreadPool pool_;
    WeightArena weights_;  // weights rewritten by load_weight
    MatmulScratch matmul_scratch_;
    std::vector<std::unique_ptr<float[]>> acts_;
    AttentionScratch attn_scratch_;
    AttentionImpl attn_impl_ = kDefaultAttentionImpl;
    AttentionCapture* capture_ = nullptr;
    KeyScores key_scores_;
};

}  // namespace fluoro::cpu
