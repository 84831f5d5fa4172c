// Pieces shared by the CPU attention implementations (cpu_attention.cpp, flash_attention.cpp):
// which keys a query token sees, how a decode step's keys are split across the thread pool, and
// the log-sum-exp merge of the split ranges' partial results (flash-decoding).
#pragma once

#include <cstdint>
#include <span>

#include "backend/backend.h"

namespace fluoro::cpu {

// The keys token t at `pos` attends to: [first, first + count) (causal, sliding window).
struct KeyRange {
    int64_t first;
    int64_t count;
};
KeyRange key_range(const AttentionParams& p, int64_t pos);

// Into how many key ranges each (token, KV head) is split: enough tasks to keep every thread
// busy when the batch alone cannot, never ranges shorter than 64 keys, at most 8 x threads tasks.
int64_t choose_split(const AttentionParams& p, const Batch& batch, int threads);

// Range c of `split` over a token's keys: [begin, begin + n) (n may be 0).
struct SplitRange {
    int64_t begin;
    int64_t n;
};
SplitRange split_range(KeyRange keys, int64_t split, int64_t c);

// Floats per split task and query head: max, sum of exp, then head_dim_v values divided by sum.
inline int64_t partial_floats(const AttentionParams& p) {
    return 2 + p.head_dim_v;
}
// Where the partial of (token t, KV head kvh, range c, group member g) lies.
inline int64_t partial_offset(const AttentionParams& p, int64_t split, int64_t t, int64_t kvh,
                              int64_t c, int64_t g) {
    const int64_t group = p.n_head / p.n_head_kv;
    return (((t * p.n_head_kv + kvh) * split + c) * group + g) * partial_floats(p);
}

// Merges the split ranges of every (token, query head) into out and writes each row's
// log-sum-exp to lse (batch tokens x n_head).
void merge_partials(const AttentionParams& p, const Batch& batch, int64_t split,
                    const float* partial, Act out, std::span<float> lse);

}  // namespace fluoro::cpu
