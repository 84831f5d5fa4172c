// The paged KV cache: one pool of fixed-size blocks (shape.block_tokens slots each) shared by all
// sequences, a block table per sequence mapping slot s to (table[s / block_tokens],
// s % block_tokens), and reference-counted blocks (kv/block_pool.h) so a prefix can be shared
// between sequences (prefix cache, speculative drafts) and copied only when written
// (copy-on-write in prepare()). Memory is allocated up front: per layer a K region and a V region
// of n_blocks x block_tokens rows, so block b's rows of one layer lie at a fixed stride and
// consecutive blocks of a table that are also consecutive in the pool read as one run. Head-major
// (KvShape::head_major, the default) splits each region into one per KV head, that head's rows of
// every pool slot in a row: a run of consecutive blocks is then one sequential stream per head.
//
// A sequence's table covers at least its length; prepare() grows it (and un-shares blocks)
// before a forward step writes, set_length() trims it to the blocks the length needs.
//
// With KvShape::window_only, the sliding-window layers live in a second group: a pool and tables
// of their own, sized for the window (+ slack + one step) per sequence; as a sequence grows, its
// blocks that lie wholly before length - window - slack are released (table entry -1), so those
// layers take the same memory at any context length. The global layers (group 0) work as above;
// blocks_of(), pool() and layer_storage() of a global layer describe group 0.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "kv/block_pool.h"
#include "kv/kv_cache.h"
#include "kv/kv_memory.h"

namespace fluoro {

// Bytes a PagedKvCache of this shape allocates (both groups with window_only). Throws like the
// constructor for a shape that cannot be built.
size_t paged_kv_bytes(const KvShape& shape);

class PagedKvCache final : public KvCache {
  public:
    // Pool of ceil(pool_tokens / block_tokens) blocks (pool_tokens 0: n_seq * ceil(n_ctx /
    // block_tokens), so every sequence can fill its context at once), its rows in `memory`
    // (host by default; a CUDA backend passes device memory). Throws Error for an invalid shape
    // or, naming the MiB, when the pool cannot be allocated.
    explicit PagedKvCache(KvShape shape, std::shared_ptr<KvMemory> memory = host_kv_memory());
    ~PagedKvCache() override;
    PagedKvCache(const PagedKvCache&) = delete;
    PagedKvCache& operator=(const PagedKvCache&) = delete;

    int64_t length(int64_t seq) const override;
    // Growing allocates the blocks up to n (Error naming the budget when the pool is full);
    // shrinking releases the blocks past the ones n needs.
    void set_length(int64_t seq, int64_t n) override;
    int64_t capacity(int64_t) const override { return shape_.n_ctx; }
    int64_t min_cut_length(int64_t seq) const override;
    void prepare(int64_t seq, int64_t begin, int64_t end) override;

    Slot k_slot(int64_t layer, int64_t seq, int64_t pos) override;
    Slot v_slot(int64_t layer, int64_t seq, int64_t pos) override;
    Run k_run(int64_t layer, int64_t seq, int64_t pos, int64_t n) const override;
    Run v_run(int64_t layer, int64_t seq, int64_t pos, int64_t n) const override;
    void compact(int64_t seq, std::span<const int64_t> keep) override;
    KvOccupancy occupancy() const override;
    size_t bytes_allocated() const override { return bytes_; }
    size_t bytes_used(int64_t seq) const override;

    // Paged-only API (prefix cache, speculative decoding, tests).
    //
    // dst's cache becomes the first n_tokens slots of src (n_tokens <= length(src), src != dst):
    // dst's old blocks are released and its table references src's first ceil(n / block_tokens)
    // blocks, the partial last one included; the first write to a shared block copies it.
    void share_prefix(int64_t src_seq, int64_t dst_seq, int64_t n_tokens);
    std::span<const int32_t> blocks_of(int64_t seq) const;  // group 0 (the global layers)
    int64_t block_tokens() const { return bt_; }
    // True when the sliding-window layers keep only their window (a second group).
    bool window_only() const { return groups_.size() > 1; }
    // Blocks the window group's pool lacks for seq to reach the most it may hold (window, slack,
    // one step, and a copy-on-write); 0 when it has them or the cache is not window-only. With a
    // pool shared by the sequences (pool_tokens), the prefix cache evicts entries until it is 0.
    int64_t window_shortfall(int64_t seq) const;
    // What the cache would allocate storing every token of every layer (bytes_allocated()
    // unless window_only()).
    size_t bytes_if_full() const;
    // One layer's storage in a token-major cache: pool row r (= block * block_tokens + offset)
    // starts at k + r * k_row_bytes (v likewise), in the memory's address space (device for
    // CUDA). Error for a head-major cache.
    struct LayerStorage {
        std::byte* k = nullptr;
        std::byte* v = nullptr;
        size_t k_row_bytes = 0, v_row_bytes = 0;
    };
    LayerStorage layer_storage(int64_t layer) const;
    const KvMemory& memory() const { return *memory_; }
    const BlockPool& pool() const { return groups_[0].pool; }
    // Test hook: the pools hand out their free blocks in a seeded random order from now on.
    void shuffle_free_blocks(uint64_t seed) {
        for (Group& g : groups_) g.pool.shuffle_free_blocks(seed++);
    }
    // The pool's invariants, plus: every table entry is held, no table lists a block twice, a
    // table covers its length, and no block has fewer references than tables listing it.
    void check_invariants() const;

  private:
    // Layers sharing one pool and one block table per sequence.
    struct Group {
        explicit Group(int64_t n_blocks) : pool(n_blocks) {}
        BlockPool pool;
        std::vector<std::vector<int32_t>> tables;  // (n_seq); -1: released (window group)
        std::vector<int64_t> first_held;           // (n_seq) first slot still stored
        std::vector<int64_t> layers;
        int64_t window = 0;  // 0: global layers; else the largest window of its layers
    };
    void check_seq(int64_t seq) const;
    const Group& group_of(int64_t layer) const {
        return groups_[size_t(layer_group_[size_t(layer)])];
    }
    // One slot's rows, Error when the slot is outside the context, not allocated or released.
    Slot slot(bool k, int64_t layer, int64_t seq, int64_t pos) const;
    Run run(bool k, int64_t layer, int64_t seq, int64_t pos, int64_t n) const;
    // Throws the budget Error unless `needed` blocks of group g are free (sequence and slots for
    // context).
    void require_free(const Group& g, int64_t needed, int64_t seq, int64_t begin,
                      int64_t end) const;
    void copy_block(const Group& g, int32_t from, int32_t to);  // its layers' K and V rows
    // Moves `rows` consecutive pool slots of one layer from pool slot src to dst, K and V, every
    // head (memmove semantics within each head's region).
    void move_slots(size_t layer, size_t dst, size_t src, size_t rows);
    // The window group's blocks wholly before length - window - slack go back to its pool.
    void release_outside_window(Group& g, int64_t seq);

    int64_t bt_ = 0;                    // block_tokens
    std::vector<Group> groups_;         // [0] global layers, [1] windowed layers (window_only)
    std::vector<int32_t> layer_group_;  // (n_layer)
    std::shared_ptr<KvMemory> memory_;
    std::byte* data_ = nullptr;  // memory_->allocate(bytes_)
    size_t bytes_ = 0;
    std::vector<std::byte*> k_base_, v_base_;        // (n_layer): row 0 of block 0 of its group
    std::vector<size_t> k_row_bytes_, v_row_bytes_;  // (n_layer) all heads of one slot
    // (n_layer): bytes from one pool slot to the next, and from one head's row to the next's
    // (token-major: row bytes and head bytes; head-major: head bytes and a head's region).
    std::vector<size_t> k_slot_bytes_, v_slot_bytes_, k_head_stride_, v_head_stride_;
    std::vector<int64_t> length_;  // (n_seq)
};

}  // namespace fluoro
