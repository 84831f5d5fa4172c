// The paged KV cache's block allocator: a fixed number of blocks, a free list and a reference
// count per block. A block is free (refs 0, on the free list) or held by refs > 0 owners (block
// tables of sequences, later the prefix cache); a block with refs > 1 is shared and must be
// copied before a write (copy-on-write, kv/paged_kv.h). It knows nothing of the rows a block
// holds: only ids and counts, so its invariants are small enough to check after every change.
#pragma once

#include <cstdint>
#include <vector>

namespace fluoro {

class BlockPool {
  public:
    // n_blocks >= 1 (Error otherwise). acquire() hands out 0, 1, 2, ... until blocks come back.
    explicit BlockPool(int64_t n_blocks);

    int64_t size() const { return int64_t(refs_.size()); }
    int64_t free_blocks() const { return int64_t(free_.size()); }
    int64_t used_blocks() const { return size() - free_blocks(); }
    int32_t refs(int32_t block) const;  // Error for an id outside the pool

    // A free block with one reference. Throws Error when every block is in use (callers that
    // can say more — the budget in tokens and MiB — check free_blocks() first).
    int32_t acquire();
    // One more owner of a held block; Error for a free block or an id outside the pool.
    void retain(int32_t block);
    // One owner fewer; the block returns to the free list at zero. Error for a free block.
    void release(int32_t block);

    // Test hook: permutes the free list so acquire() hands out blocks in a seeded random order
    // (a sequence's blocks then lie anywhere in the pool).
    void shuffle_free_blocks(uint64_t seed);

    // Throws Error describing the first violation found: a negative count, the sum of counts
    // differing from the references handed out, a free-list entry out of range, listed twice
    // or still referenced, a block with no reference missing from the free list. O(size()).
    void check_invariants() const;

  private:
    void check_id(int32_t block, const char* op) const;

    std::vector<int32_t> refs_;  // (n_blocks)
    std::vector<int32_t> free_;  // stack: acquire() pops the back
    int64_t total_refs_ = 0;     // acquire + retain - release, to cross-check sum(refs_)
};

}  // namespace fluoro
