// Attention on the GPU over the paged KV cache (kv/paged_kv.h with device memory): storing a
// batch's K/V rows into their cache slots, a FlashAttention kernel (K/V tiles in shared memory,
// online softmax, log-sum-exp kept, GQA-aware) for prefill, and a flash-decoding kernel for a few
// query rows that splits each KV range across thread blocks and merges the partials by their
// log-sum-exp. Causal by position, optional sliding window and logit soft-capping, as the CPU
// backend (backend/cpu/cpu_attention.cpp) which is the reference.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace fluoro::cuda {

enum class KvElem { F32, F16 };  // storage of cached rows (the cache's KvType)

// One layer of the paged cache in device memory. Pool row r (= block * block_tokens + offset)
// of this layer starts at k + r * k_row_bytes; a row holds n_head_kv head rows back to back,
// head h at h * head_dim_k elements.
struct KvLayerDev {
    std::byte* k = nullptr;
    std::byte* v = nullptr;
    size_t k_row_bytes = 0;
    size_t v_row_bytes = 0;
    KvElem elem = KvElem::F16;
};

// A batch's tokens as the kernels see them; every pointer is device memory.
struct AttnBatchDev {
    int64_t n_tok = 0;
    const int32_t* pos = nullptr;       // (n_tok) position of each token in its sequence
    const int32_t* seq = nullptr;       // (n_tok) sequence of each token
    const int32_t* slot_row = nullptr;  // (n_tok) pool row where token t's K/V are stored
    const int32_t* tables = nullptr;    // (n_seq x table_pitch) block ids: slot s of sequence q
                                      // is pool row tables[q * table_pitch + s / bt] * bt + s % bt
    int64_t table_pitch = 0;
    int64_t block_tokens = 0;           // bt
    int32_t max_pos = 0;                // host-known maximum of pos (sizes the decode split)
    bool same_seq_consecutive = false;  // host-known: one sequence, positions p0, p0+1, ...
};

struct AttnShape {
    int64_t n_head = 0;
    int64_t n_head_kv = 0;  // n_head % n_head_kv == 0
    int64_t head_dim_k = 0;
    int64_t head_dim_v = 0;
    float scale = 1.0f;    // on q·k
    int64_t window = 0;    // keys with pos > q_pos - window; 0 = all keys up to q_pos
    float softcap = 0.0f;  // score = softcap * tanh(score / softcap) after scaling; 0 = off
};

// Writes token t's K row (the n_head_kv * head_dim_k f32 at k + t * n_head_kv * head_dim_k: rows
// are dense) and V row likewise into pool row slot_row[t] of the layer, converting to the cache's
// element type. Asynchronous.
void kv_store(const KvLayerDev& layer, const AttnBatchDev& batch, const AttnShape& shape,
              const float* k, const float* v, cudaStream_t stream);

// Owns the split-K partials scratch of one stream.
class Attention {
  public:
    Attention();
    ~Attention();
    Attention(const Attention&) = delete;
    Attention& operator=(const Attention&) = delete;

    // Scratch for up to max_tokens query rows of n_head heads of head_dim_v, at contexts up to
    // max_ctx keys (run() grows it if a call needs more, outside the decode loop's steady state).
    void reserve(int64_t max_tokens, int64_t n_head, int64_t head_dim_v, int64_t max_ctx);
    size_t scratch_bytes() const;

    // out[t, h * head_dim_v ...] = softmax_j(score(q_t,h , k_j)) · v_j over the keys j of
    // sequence seq[t] with j <= pos[t] (and j > pos[t] - window when window > 0), where q is
    // n_tok x (n_head * head_dim_k) f32 and out n_tok x (n_head * head_dim_v) f32 (device).
    // Query head h reads KV head h / (n_head / n_head_kv). The K/V rows of the batch must
    // already be stored (kv_store). lse, when not null, receives n_tok x n_head floats:
    // log(sum_j exp(score_j)) of each row (scores after scale and soft-capping). Picks the
    // prefill or the split decode kernel by shape. Asynchronous.
    void run(const AttnShape& shape, const KvLayerDev& layer, const AttnBatchDev& batch,
             const float* q, float* out, float* lse, cudaStream_t stream);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Capture: probabilities p_j = exp(score(q_row, k_j) - lse_row) of one query row and head for
// keys [key_begin, key_end) of its sequence (0 where j > pos or outside the window), written to
// probs (device, key_end - key_begin floats). q_row is that head's head_dim_k f32 query (device,
// already rotated), lse_row the value run() returned for it.
void attention_probs(const AttnShape& shape, const KvLayerDev& layer, const int32_t* d_table,
                     int64_t block_tokens, int32_t pos, int64_t kv_head, const float* q_row,
                     float lse_row, int64_t key_begin, int64_t key_end, float* probs,
                     cudaStream_t stream);

}  // namespace fluoro::cuda
