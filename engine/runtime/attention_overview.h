// Every layer x head's attention of one cached position at once: the position re-run through the
// model (decode/position_rerun.h) with every layer's and head's row read out, and each head's
// pattern named (telemetry/attention_patterns.h). What ComputeAttentionOverview answers with and
// `fluoro lens --overview` prints. The backend must have no attention capture of its own set
// (the caller swaps it out); the cache is left as it was.
#pragma once

#include <cstdint>
#include <span>

#include "telemetry/events.h"

namespace fluoro {

class Backend;
class KvCache;
class Model;

// tokens: the sequence's tokens by slot, at least slot + 1 of them (keys 0..slot). Fills
// position, n_layer, n_head, heads, weights, key_pieces and ms of `out`; throws Error like
// PositionRerun.
void fill_attention_overview(Model& model, Backend& backend, KvCache& kv, int64_t seq, int64_t slot,
                             std::span<const int32_t> tokens, AttentionOverview& out);

}  // namespace fluoro
