// FlashAttention's IO argument (docs/CLAIMS.md, claim 3), on this CPU: causal attention over n
// tokens for one head (head_dim 64), computed three ways on the same random Q, K, V —
//   naive     the n × n score matrix materialized (n² floats allocated), softmaxed in place, then
//             multiplied by V: what "standard attention" means in the FlashAttention paper
//   rowwise   one query at a time with one row of n scores (the engine's standard path's shape:
//             O(n) scratch, the row stays in cache)
//   flash     tiles of 16 queries × 64 keys with an online softmax (running max and sum): no
//             score row at all, and each K/V tile read once per query tile, not once per query
// — single-threaded, so the comparison is of the algorithms, not of thread scheduling. For each:
// time, the extra memory it allocates (scores and accumulators), and the bytes its loops move for
// scores and for K/V, counted from the loops' structure (not sampled). Their outputs must agree.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace fluoro {

struct AttentionIoPath {
    double ms = 0;
    uint64_t extra_bytes = 0;  // allocated beyond Q, K, V and the output
    uint64_t score_bytes = 0;  // score reads + writes the loops make (memory or cache)
    uint64_t kv_bytes = 0;     // K and V reads the loops make
};

struct AttentionIoPoint {
    int64_t n = 0;
    AttentionIoPath naive, rowwise, flash;
    float max_diff_rowwise = 0, max_diff_flash = 0;  // |output - naive's| over every value
};

inline constexpr int64_t kAttentionIoHeadDim = 64;
inline constexpr int64_t kFlashQueryTile = 16, kFlashKeyTile = 64;

// One point per context length (each ≥ 1). Throws Error for n < 1.
std::vector<AttentionIoPoint> measure_attention_io(std::span<const int64_t> contexts);

}  // namespace fluoro
