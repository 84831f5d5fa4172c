// The CUDA backend: the Backend seam (backend/backend.h) on one NVIDIA GPU. Weights are uploaded
// once and stay in their GGUF formats in device memory; activations and the paged KV cache
// (kv/paged_kv.h over device memory) live on the device; every operation is a kernel queued on
// one stream, and only read() (the logits) waits for the GPU. The CPU backend is the reference
// each kernel is tested against (tests/cuda/).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/attention_readout.h"

namespace fluoro::cuda {

class Matmul;
class Attention;
class IntUploads;
class CudaClock;

class CudaBackend final : public Backend {
  public:
    // Device `device`; throws Error with the reason (no driver, no device, a GPU this build has
    // no kernels for) so the caller can fall back to the CPU.
    explicit CudaBackend(int device = 0);
    ~CudaBackend() override;
    CudaBackend(const CudaBackend&) = delete;
    CudaBackend& operator=(const CudaBackend&) = delete;

    std::string_view name() const override { return "cuda"; }
    const std::string& device_name() const { return device_name_; }
    cudaStream_t stream() const { return stream_; }
    // Bytes this backend holds on the device (weights, activations, scratch; not the KV cache).
    size_t device_bytes() const;
    size_t attention_scratch_bytes() const override;

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
    // One implementation on the GPU (flash, with split decode); the setting is kept and
    // reported, not used.
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
    void add(Act x, const Act& y) override;
    void scale(Act x, float s) override;
    void swiglu(Act gate, const Act& up) override;
    void swiglu_oai(Act gate, const Act& up, float alpha, float limit) override;
    void geglu_tanh(Act gate, const Act& up) override;
    void softcap(Act x, float cap) override;
    void gather_rows(const Act& x, std::span<const int32_t> rows, Act y) override;
    void copy_blocks(const Act& x, Act y, const BlockCopy& c) override;
    void read(const Act& x, std::span<float> host) override;
    void synchronize() override;
    // CUDA events on the stream (backend/cuda/cuda_clock.h).
    DeviceClock* device_clock() override;

  private:
    struct DeviceAlloc {
        void* ptr = nullptr;
        size_t bytes = 0;
    };
    void* device_alloc(size_t bytes, const std::string& what);
    // Reads requested rows / sparsity out of an attention call (capture_ set).
    void serve_capture(const AttentionParams& p, const Act& q, const Batch& batch, KvCache& kv,
                       const float* lse);

    int device_ = 0;
    std::string device_name_;
    cudaStream_t stream_ = nullptr;
    std::vector<DeviceAlloc> allocs_;  // weights and activations, freed at destruction
    std::unique_ptr<Matmul> matmul_;
    std::unique_ptr<Attention> attn_;
    std::unique_ptr<IntUploads> uploads_;
    std::unique_ptr<CudaClock> clock_;  // made on first use
    float* lse_ = nullptr;  // (max_tokens x max heads) log-sum-exp, allocated on first capture
    int64_t lse_capacity_ = 0;
    int64_t max_tokens_ = 0;
    AttentionImpl attn_impl_ = kDefaultAttentionImpl;
    AttentionCapture* capture_ = nullptr;
    cpu::KeyScores key_scores_;
};

}  // namespace fluoro::cuda
