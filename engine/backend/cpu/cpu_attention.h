// Causal attention over a KvCache on the CPU, GQA-aware. One task per (token, KV head, key range)
// computes every query head of that group against each cached key row loaded once: scores
// (q·k, SIMD, reading the cache run by run), softmax, then p·V. A decode step of one token has
// too few (token, KV head) pairs to occupy the threads, so its keys are split into ranges whose
// partial results (max, sum, weighted values) are merged afterwards, as flash-decoding does;
// a prefill batch keeps each token's keys in one task.
//
// Numerics follow ggml's non-flash path: with an F16 cache the queries are rounded to fp16 before
// q·k and the normalized probabilities are rounded to fp16 before p·V (ggml converts them to the
// cache type for its F16 mat-mul). With split keys the probabilities are normalized per range.
#pragma once

#include <vector>

#include "backend/backend.h"
#include "backend/cpu/thread_pool.h"

namespace fluoro::cpu {

// Copies batch K/V rows into the cache (converting to the cache type).
void store_kv(ThreadPool& pool, const AttentionParams& p, const Act& k, const Act& v,
              const Batch& batch, KvCache& kv);

// Working memory of attend(), reused across calls: grows on first use for a given shape, so a
// decode loop does not allocate after its first step.
struct AttentionScratch {
    std::vector<float> per_worker;  // scores and rounded queries of the task a worker runs
    int64_t per_worker_floats = 0;
    std::vector<float> partial;  // split tasks: per task and query head max, sum, values
};

// out (rows = batch tokens, n_head * head_dim_v) = softmax(q·kᵀ·scale + mask)·v over the cached
// keys of each token's sequence (positions 0..pos, or the last `window` of them).
void attend(ThreadPool& pool, const AttentionParams& p, const Act& q, const Batch& batch,
            const KvCache& kv, Act out, AttentionScratch& scratch);

}  // namespace fluoro::cpu
