// A contiguous per-sequence KV cache in host memory: for each layer and sequence one block of
// n_ctx rows for K and one for V (head-major: per head n_ctx head rows, the heads one after the
// other). Simple and fast; the paged cache (kv/paged_kv.h) is the engine's default.
#pragma once

#include <memory>
#include <vector>

#include "kv/kv_cache.h"

namespace fluoro {

class ContiguousKvCache final : public KvCache {
  public:
    // Allocates n_seq * n_ctx * bytes_per_token bytes up front (throws Error naming the size
    // when the allocation fails).
    explicit ContiguousKvCache(KvShape shape);

    int64_t length(int64_t seq) const override;
    void set_length(int64_t seq, int64_t n) override;
    int64_t capacity(int64_t) const override { return shape_.n_ctx; }
    Slot k_slot(int64_t layer, int64_t seq, int64_t pos) override;
    Slot v_slot(int64_t layer, int64_t seq, int64_t pos) override;
    Run k_run(int64_t layer, int64_t seq, int64_t pos, int64_t n) const override;
    Run v_run(int64_t layer, int64_t seq, int64_t pos, int64_t n) const override;
    size_t bytes_allocated() const override { return bytes_; }

  private:
    void check(int64_t layer, int64_t seq, int64_t pos) const;

    std::unique_ptr<std::byte[]> data_;
    size_t bytes_ = 0;
    std::vector<size_t> k_offset_;  // (n_layer): byte offset of layer's K block for seq 0
    std::vector<size_t> v_offset_;
    std::vector<size_t> k_seq_stride_, v_seq_stride_;  // bytes per sequence, per layer
    // Per layer: bytes from one slot to the next, and from one head's row to the next's.
    std::vector<size_t> k_slot_bytes_, v_slot_bytes_, k_head_stride_, v_head_stride_;
    std::vector<int64_t> length_;  // (n_seq)
};

}  // namespace fluoro
