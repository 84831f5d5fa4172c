// What the CPU backend reads out of an attention call for an AttentionCapture
// (backend/attention_capture.h), after attend() has left each row's log-sum-exp in the scratch:
// - capture_rows: exact probabilities of the requested (layer, head, rows, keys) regions,
//   recomputed from Q, the cached K and the log-sum-exp: p = exp(logit - lse). The cost is that
//   of the captured cells only, and the same for both implementations.
// - compute_sparsity: per query head of the batch's last token, entropy, top-k mass, fraction of
//   keys below a threshold and sink mass, from the logits attend() stashed for that token, and the
//   H2O score per key (those probabilities summed over each KV head's query heads) added up.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/attention_capture.h"
#include "backend/backend.h"
#include "backend/cpu/cpu_attention.h"
#include "backend/cpu/thread_pool.h"

namespace fluoro::cpu {

// Accumulated attention per key: per layer, (n_head_kv, n_seq, n_ctx) floats, allocated when a
// layer first accumulates.
class KeyScores {
  public:
    std::span<const float> get(int64_t layer, int64_t kv_head, int64_t seq) const;
    // The row of (layer, kv_head, seq), allocated for the cache's shape on first use.
    float* row(const KvShape& shape, int64_t layer, int64_t kv_head, int64_t seq);
    // Zeroes positions the batch rewrites in every KV head of the layer (if allocated).
    void forget(int64_t layer, const Batch& batch);
    // The cache's compaction (KvCache::compact) applied to every layer's and KV head's scores of
    // seq: score keep[i] moves to i, the rest is zeroed.
    void compact(int64_t seq, std::span<const int64_t> keep);
    void clear() { layers_.clear(); }

  private:
    struct Layer {
        int64_t n_head_kv = 0, n_seq = 0, n_ctx = 0;
        std::vector<float> scores;
    };
    std::vector<Layer> layers_;
};

// True when some region asks for layer `layer`.
bool wants_rows(const AttentionCapture& c, int64_t layer);

void capture_rows(const AttentionParams& p, const Act& q, const Batch& batch, const KvCache& kv,
                  const AttentionScratch& scratch, AttentionCapture& capture);

// Needs attend() to have run with stash_token = batch.size() - 1.
void compute_sparsity(ThreadPool& pool, const AttentionParams& p, const Batch& batch,
                      const KvShape& shape, AttentionScratch& scratch, AttentionCapture& capture,
                      KeyScores& key_scores);

}  // namespace fluoro::cpu
