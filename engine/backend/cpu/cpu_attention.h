// Causal attention over a KvCache on the CPU, GQA-aware, in two implementations (AttentionImpl):
//
// Standard (this file): one task per (token, KV head, key range) computes every query head of
// that group against each cached key row loaded once: scores (q·k, SIMD, reading the cache run by
// run) materialized for the whole range, softmax, then p·V. Numerics follow ggml's non-flash
// path: with F16 keys the queries are rounded to fp16 before q·k, and with F16 values the
// normalized probabilities are rounded to fp16 before p·V (ggml converts them to the cache type for
// its F16 mat-mul). With split keys the probabilities are normalized per range. With a quantized
// cache (Q8_0, Q4_0) the kernels read the blocks in place and dequantize them exactly in registers
// (kv_rows.h head_rows); queries and probabilities stay float32, so the result is attention over
// the dequantized K/V to float32 accuracy (ggml instead quantizes q to Q8_0 for its integer dot;
// we keep the error to the cache's own).
//
// Flash (flash_attention.h): the same tasks walk their keys in tiles with an online softmax.
//
// A decode step of one token has too few (token, KV head) pairs to occupy the threads, so its keys
// are split into ranges whose partial results (max, sum, weighted values) are merged afterwards by
// their log-sum-exp, as flash-decoding does; a prefill batch keeps each token's keys in one task.
// Both implementations leave each (token, query head) row's log-sum-exp in the scratch, from which
// attention_capture.h recomputes exact probabilities of the rows a caller asks for.
#pragma once

#include <cstddef>
#include <span>
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
    std::vector<float> per_worker;  // scores (a row or a tile) and rounded queries per worker
    int64_t per_worker_floats = 0;
    std::vector<float> partial;  // split tasks: per task and query head max, sum, values
    std::vector<float> lse;      // (batch tokens, n_head): log Σ exp(logit) of each row
    // (n_head, n_ctx): the logits (scaled, soft-capped) of AttendOptions::stash_token, by key
    // offset from the first key it attends to.
    std::vector<float> stash;
    int64_t stash_stride = 0;
    std::vector<float> top_k;    // the readout's top-k candidates (reused)
    std::vector<float> readout;  // per worker n_ctx floats: probabilities for the sparsity readout

    size_t bytes() const;  // allocated bytes (peak scratch: the buffers only grow)
};

struct AttendOptions {
    AttentionImpl impl = AttentionImpl::Standard;
    int64_t stash_token = -1;  // batch row whose logits are kept in scratch.stash (-1: none)
};

// out (rows = batch tokens, n_head * head_dim_v) = softmax(q·kᵀ·scale + mask)·v over the cached
// keys of each token's sequence (positions 0..pos, or the last `window` of them), with the
// sinks' logits in the denominators when p.sinks is set (apply_sinks).
void attend(ThreadPool& pool, const AttentionParams& p, const Act& q, const Batch& batch,
            const KvCache& kv, Act out, AttentionScratch& scratch, const AttendOptions& opt = {});

// The pieces attend() dispatches to (flash_attention.cpp has the other).
void attend_standard(ThreadPool& pool, const AttentionParams& p, const Act& q, const Batch& batch,
                     const KvCache& kv, Act out, AttentionScratch& scratch, int64_t stash_token);
void attend_flash(ThreadPool& pool, const AttentionParams& p, const Act& q, const Batch& batch,
                  const KvCache& kv, Act out, AttentionScratch& scratch, int64_t stash_token);

// Attention sinks, after the keys: a row normalised over its keys with log-sum-exp L gains
// e^sink in its denominator, so its output is scaled by e^L / (e^L + e^sink) = 1 / (1 +
// e^(sink - L)) and its log-sum-exp becomes log(e^L + e^sink) — the captured weights exp(s - lse)
// are then the ones the output used, summing to less than 1. lse: (n_tokens x n_head).
void apply_sinks(const AttentionParams& p, int64_t n_tokens, Act out, std::span<float> lse);

}  // namespace fluoro::cpu
