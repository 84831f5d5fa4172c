// Standard (materialized-scores) causal attention over a KvCache on the CPU, GQA-aware: one task
// per (token, KV head) computes all query heads of that group against each key row loaded once.
#pragma once

#include "backend/backend.h"
#include "backend/cpu/thread_pool.h"

namespace fluoro::cpu {

// Copies batch K/V rows into the cache (converting to the cache type).
void store_kv(ThreadPool& pool, const AttentionParams& p, const Act& k, const Act& v,
              const Batch& batch, KvCache& kv);

// scratch: per worker, at least n_head/n_head_kv * (n_ctx + head_dim_k) floats.
void attend(ThreadPool& pool, const AttentionParams& p, const Act& q, const Batch& batch,
            const KvCache& kv, Act out, float* scratch, int64_t scratch_per_worker);

}  // namespace fluoro::cpu
