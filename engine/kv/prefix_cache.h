// Cross-conversation prompt cache over the paged KV cache. Sequences [first_slot, first_slot +
// n_slots) of a PagedKvCache hold cached token prefixes ("entries"); an entry shares its blocks
// by reference count with the sequence it was taken from (PagedKvCache::share_prefix), so caching
// copies nothing and a block costs memory only while something holds it. A radix tree over token
// ids (edges labelled with runs of tokens, split where entries diverge) finds the longest cached
// prefix of a prompt at token granularity; restoring shares whole blocks (the partial last block
// is copied on its first write). Entries go least recently used first when the slots are full
// or the pool must make room for the live sequence.
//
// What makes cached KV valid — the model file, KV type, RoPE settings, attention — is fixed for
// the life of one KV cache; its owner drops the PrefixCache with the cache. Prefixes are only
// meaningful for sequences whose slot i holds conversation token i (no eviction policy). Over a
// cache keeping only the window of sliding-window layers, a match is restored only where its
// entry still holds the window rows that prefix ends with (a shorter match is a miss).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

namespace fluoro {

class PagedKvCache;

class PrefixCache {
  public:
    // n_slots sequences of kv starting at first_slot are the cache's; they must be empty.
    // Throws Error when the range is outside kv's sequences.
    PrefixCache(PagedKvCache& kv, int64_t first_slot, int64_t n_slots);
    ~PrefixCache();
    PrefixCache(const PrefixCache&) = delete;
    PrefixCache& operator=(const PrefixCache&) = delete;

    struct Match {
        int64_t slot = -1;   // KV sequence holding the prefix (-1: nothing matched)
        int64_t tokens = 0;  // how many leading tokens of the query it holds
        // Where the query left the cached paths: the cached token at index `tokens` (one of
        // them when entries branch there); -1 when no entry continues past the match.
        int32_t next_cached = -1;
    };
    // The longest prefix of `tokens` that an entry holds. Counts a lookup (and a hit).
    Match lookup(std::span<const int32_t> tokens);
    // The same without counting it (restoring a saved cache is not a request).
    Match peek(std::span<const int32_t> tokens) const;
    // Sequence dst becomes the first m.tokens slots of entry m.slot (shared blocks).
    void restore(const Match& m, int64_t dst);
    // Caches the first tokens.size() slots of sequence src (which holds those tokens). Nothing
    // when an entry already holds them; entries that are prefixes of them are replaced. Evicts
    // the least recently used entry when no slot is free. Returns whether an entry was added.
    bool store(std::span<const int32_t> tokens, int64_t src);
    // Evicts least recently used entries until the pool has `blocks` free blocks or nothing is
    // cached.
    void ensure_free_blocks(int64_t blocks);
    // Frees room for sequence seq to grow to the full context: ensure_free_blocks of the blocks
    // it may still need (plus one for a copy-on-write of a shared partial block), and in a
    // window-only cache the window pool's blocks it may need (PagedKvCache::window_shortfall).
    void reserve_for(int64_t seq);
    // The same for several sequences growing at once (continuous batching): room for all of
    // them together to reach the full context.
    void reserve_for(std::span<const int64_t> seqs);
    void clear();

    struct Stats {
        int64_t entries = 0;
        int64_t cached_tokens = 0;  // tokens over all entries (shared ones counted per entry)
        int64_t lookups = 0, hits = 0, hit_tokens = 0;
        int64_t stored = 0, evictions = 0, evicted_tokens = 0;
    };
    Stats stats() const;
    // The radix tree as it stands, pre-order (root first, children by their first token), for
    // the UI: each node's edge, the entry ending there, the entries under it, and how much of its
    // edge `query` follows from the root (the path a prompt matched).
    struct TreeNode {
        int32_t parent = -1;        // index into the returned vector; -1: the root
        int64_t depth = 0;          // tokens from the root to this node's end
        std::vector<int32_t> edge;  // the tokens on the edge into it (empty: the root)
        int64_t slot = -1;          // the entry ending here; -1: none
        int64_t recency = -1;       // that entry's rank by last use (0: the most recent)
        int64_t entries = 0;        // entries in its subtree (its own included)
        int64_t matched = 0;        // tokens of its edge that `query` follows (0..edge.size())
    };
    std::vector<TreeNode> tree(std::span<const int32_t> query = {}) const;
    // Each entry's tokens, by slot (empty for free slots): tests and the UI.
    std::vector<std::vector<int32_t>> entries() const;
    // The slots holding entries, least recently used first (the order to save them in, so a
    // restore keeps their recency).
    std::vector<int64_t> slots_by_recency() const;
    PagedKvCache& kv() const { return kv_; }
    int64_t first_slot() const { return first_; }  // entries()[i] is slot first_slot() + i
    int64_t slot_count() const { return n_; }
    // Tree and cache agree: every entry reachable by its tokens, every leaf an entry, no
    // unlabelled inner node with a single child, entry slots as long as their tokens, free slots
    // empty. Throws Error naming the first violation.
    void check_invariants() const;

  private:
    struct Node;
    struct Entry {
        std::vector<int32_t> tokens;
        Node* node = nullptr;
        uint64_t used = 0;  // LRU clock
        bool live = false;
    };
    // Deepest point of the tree on `tokens`' path: tokens matched, the node at or below it, and
    // the cached token that follows the match (-1: none). prefixes (if given) receives the
    // entries passed on the way: those that are prefixes of tokens.
    struct Walk {
        int64_t matched = 0;
        Node* node = nullptr;
        int32_t next = -1;
    };
    Walk walk(std::span<const int32_t> tokens, std::vector<int64_t>* prefixes = nullptr) const;
    int64_t any_slot(const Node* n) const;
    // An entry at or under n whose first `tokens` slots can be restored; -1 when none can.
    int64_t restorable_slot(const Node* n, int64_t tokens) const;
    void insert(int64_t slot);
    void erase(int64_t slot);  // from the tree and the KV
    void evict_lru();

    PagedKvCache& kv_;
    int64_t first_, n_;
    std::unique_ptr<Node> root_;
    std::vector<Entry> entries_;  // by slot - first_
    uint64_t clock_ = 0;
    Stats stats_;
};

}  // namespace fluoro
