// Running one cached position again, alone, through the model — what the logit lens and the
// attention overview use to look inside a step that has already happened. The pass reads the
// cache's earlier positions as they are and rewrites the position's own K/V rows in the layers it
// runs; the kernels are batch-invariant (a row is computed as one decode step computes it), and
// the rows are saved when this is made and written back when it goes all the same, so the cache
// is left byte for byte as it was, also when a pass throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace fluoro {

class Model;
class KvCache;

class PositionRerun {
  public:
    // slot: a cached slot of sequence seq (a slot is its RoPE position, kv/kv_cache.h); token:
    // the token it holds. Throws Error for a slot outside the sequence or a token outside the
    // vocabulary.
    PositionRerun(Model& model, KvCache& kv, int64_t seq, int64_t slot, int32_t token);
    ~PositionRerun();
    PositionRerun(const PositionRerun&) = delete;
    PositionRerun& operator=(const PositionRerun&) = delete;

    // The position's logits after its first `layers` layers, then the final norm and LM head
    // (0 or n_layer: the whole model). Valid until the next forward pass of the model.
    std::span<const float> run(int64_t layers = 0);

  private:
    Model& model_;
    KvCache& kv_;
    int64_t seq_, slot_;
    int32_t token_;
    std::vector<std::vector<std::byte>> k_, v_;  // the saved rows, per layer
};

}  // namespace fluoro
