// "KV cache bytes per token = 2 × layers × KV heads × head dim × element size" (docs/CLAIMS.md,
// claim 2), checked against what the engine's allocator really reserves: for each KV storage
// type, the textbook figure from the model's shapes (summed per layer, K and V head dims apart,
// the element size of a quantized type being its block's bytes over its values: q8_0 34 / 32,
// q4_0 18 / 32 as GGML stores them) beside the cache's own bytes per token and the bytes it
// allocated for `ctx` tokens.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/kv_cache.h"

namespace fluoro {

class Model;

struct KvMemoryRow {
    KvType type = KvType::F16;
    double element_bytes = 0;        // bytes per stored value
    uint64_t formula_per_token = 0;  // Σ_layers n_head_kv × (head_dim_k + head_dim_v) × that
    uint64_t cache_per_token = 0;    // KvShape::bytes_per_token of the cache created
    int64_t ctx = 0;                 // tokens the cache was created for
    uint64_t allocated = 0;          // KvCache::bytes_allocated() after creation
};

// One row per type: creates a cache of `ctx` tokens (one sequence) of each. Throws Error when a
// type cannot hold the model's head size (quantized types need a multiple of 32).
std::vector<KvMemoryRow> measure_kv_memory(const Model& model, std::span<const KvType> types,
                                           int64_t ctx);

// The textbook figure for published shapes (no model file needed): 2 × layers × kv_heads ×
// head_dim × element_bytes.
uint64_t kv_bytes_per_token(int64_t layers, int64_t kv_heads, int64_t head_dim,
                            double element_bytes);

}  // namespace fluoro
