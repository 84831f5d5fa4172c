// The logit lens (nostalgebraist, "interpreting GPT: the logit lens", 2020): what the model would
// predict at one position if its residual stream went straight to the final norm and the LM head
// after layer L, for every L = 1..n_layer. The last row is the model's real prediction.
//
// How: the token at the position is run again, alone, through the first L layers and then the
// final norm and LM head (decode/position_rerun.h) — the early-exit pass self-speculative
// drafting uses (Batch::exit_layer), so every architecture that supports early exit has a lens
// without code of its own, no second model is loaded, and the cache is left as it was.
//
// Cost: n_layer single-token passes of 1..n_layer layers, about n_layer / 2 decode steps.
#pragma once

#include <cstdint>
#include <vector>

#include "sampling/dist_top.h"

namespace fluoro {

class Model;
class KvCache;

struct LensRequest {
    int64_t seq = 0;      // the sequence (conversation slot) in the cache
    int64_t slot = 0;     // the cache slot whose prediction is looked at (< its length;
                          // a slot is its RoPE position, kv/kv_cache.h)
    int32_t token = 0;    // the token the slot holds (its input)
    int32_t target = -1;  // the token that followed it, -1 when none is known
    int32_t top_k = 10;   // 1..100
};

// [L - 1]: the prediction after L layers (its top_k tokens, entropy, and the target's
// log-probability and rank); back() is the model's output. Throws
// Error for a slot outside the sequence or a top_k outside 1..100.
std::vector<DistTop> logit_lens(Model& model, KvCache& kv, const LensRequest& request);

}  // namespace fluoro
