// What a caller may read out of a backend's attention besides its output, and how it asks: the
// attention implementation (standard or flash), the probability rows of named (layer, head, query
// rows, key range) regions, and per-head sparsity readouts of each call's last query row. A plain
// data seam: the caller fills the request part of an AttentionCapture, hands it to the backend
// (Backend::set_attention_capture) and drains the results it appends; nothing is computed or
// copied for what is not asked. The backend knows nothing of events or steps.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "settings/settings.h"  // AttentionImpl

namespace fluoro {

// A region of attention probabilities to read out of every attention call.
struct AttentionCaptureRegion {
    int32_t id = 0;         // the caller's tag, copied into each captured row
    int32_t layer = 0;      // -1: every layer
    int32_t head = -1;      // query head; -1: every query head
    int64_t rows = 1;       // the call's last `rows` query tokens; 0: all of them
    int64_t key_begin = 0;  // key positions [key_begin, key_end); key_end <= 0: up to the query
    int64_t key_end = 0;
};

// One captured query row: probabilities of keys key_begin .. key_begin + weights.size() - 1
// (keys the row does not attend to, masked or in its future, hold 0).
struct CapturedAttentionRow {
    int32_t id = 0;
    int32_t layer = 0, head = 0;
    int64_t seq = 0, pos = 0;  // the query token
    int64_t key_begin = 0;
    std::vector<float> weights;
};

// Sparsity of one query head's probabilities over the keys of one query row.
struct HeadSparsity {
    float entropy = 0;          // nats
    float top_k_mass = 0;       // mass on the top_k most attended keys
    float below_threshold = 0;  // fraction of keys whose probability is below `threshold`
    float sink_mass = 0;        // mass on key positions 0..3 (attention sinks)
};

// Per layer: the sparsity of every query head for the call's last query token.
struct LayerSparsity {
    int32_t layer = 0;
    int64_t seq = 0, pos = 0;         // the query token
    int64_t n_keys = 0;               // keys it attended to
    std::vector<HeadSparsity> heads;  // n_head
};

struct AttentionCapture {
    // --- request (set by the caller) ---
    std::vector<AttentionCaptureRegion> regions;
    // Sparsity of each call's last query row, and the accumulated attention per key (H2O score:
    // that row's probabilities summed over the query heads of each KV head, added up over calls).
    bool stats = false;
    int32_t top_k = 8;
    float threshold = 1e-3f;

    // --- results (appended by the backend; the caller drains them) ---
    std::vector<CapturedAttentionRow> rows;
    std::vector<LayerSparsity> sparsity;

    bool active() const { return stats || !regions.empty(); }
};

}  // namespace fluoro
