// The KV cache seen through an interface: every reader (attention on any backend, the UI's
// occupancy view) goes through row accessors, so a contiguous cache (kv/contiguous_kv.h) and the
// paged cache (kv/paged_kv.h) are interchangeable. Rows live in backend-owned memory.
//
// A sequence's cache holds `length` slots. Slot i holds the token whose keys were rotated for
// RoPE position i: when an eviction policy (kv/kv_policy.h) drops tokens, compact() moves the
// kept rows down and Model::shift_kv re-rotates their keys, so slot index, RoPE position and the
// causal/window mask stay one number (as llama.cpp's context shift and StreamingLLM do).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "settings/settings.h"

namespace fluoro {

// Bytes of `elems` consecutive values stored as t (KvType and its traits: settings/settings.h);
// for a quantized type elems must be a multiple of kKvQuantBlock (Error otherwise).
size_t kv_row_bytes(KvType t, int64_t elems);

struct KvShape {
    int64_t n_layer = 0;
    std::vector<int64_t> n_head_kv;  // per layer
    int64_t head_dim_k = 0;
    int64_t head_dim_v = 0;
    KvTypes type;       // keys' and values' storage types (settings/settings.h)
    int64_t n_seq = 1;  // sequences (conversation slots)
    int64_t n_ctx = 0;  // most tokens one sequence holds
    // Paged caches: tokens per block, and the pool's size in tokens over all sequences
    // (0: n_seq * n_ctx, every sequence can fill its context at once).
    bool paged = true;  // false: one contiguous block of n_ctx rows per sequence
    // How a layer's rows lie. Head-major (the default): each KV head's rows of consecutive slots
    // side by side, so a decode step's attention reads one sequential stream per KV head (with
    // the heads of a slot side by side instead, each head reads head_bytes out of every
    // row_bytes, and decode at depth ran at about half the bandwidth: docs/PERFORMANCE.md
    // "KV layout"). Token-major: a slot's heads side by side (the CUDA kernels read that).
    bool head_major = true;
    int64_t block_tokens = 16;
    int64_t pool_tokens = 0;
    // Sliding-window layers: layer_window[il] > 0 is how many keys layer il attends to (empty:
    // every layer is global). With window_only, a paged cache stores those layers in a pool of
    // its own holding, per sequence, only the slots their windows can still read, plus
    // window_slack slots (how far a sequence may be cut back and go on: a rejected draft, a
    // re-rendered last turn) and step_tokens (the most one forward step writes); older blocks are
    // released as the sequence grows. Compaction (an evicting KV policy) needs every row: a cache
    // keeping only the window refuses it. Other caches store every layer in full.
    std::vector<int64_t> layer_window;
    bool window_only = false;
    int64_t window_slack = 32;
    int64_t step_tokens = 512;
    // Values read from the keys' rows (MLA's absorbed path, where a token's latent is both): with
    // v_in_k >= 0 a head's value row is dims [v_in_k, v_in_k + head_dim_v) of its key row, and
    // the cache stores no values of its own. It applies only where the keys' storage can serve
    // as values: the same type for both, the offset at a quantization block's start
    // (values_in_keys()); otherwise the values are stored apart as for any model. A backend
    // whose kernels cannot read them there sets v_in_k = -1 (CUDA, for now).
    int64_t v_in_k = -1;

    int64_t k_row_elems(int64_t layer) const { return n_head_kv[size_t(layer)] * head_dim_k; }
    int64_t v_row_elems(int64_t layer) const { return n_head_kv[size_t(layer)] * head_dim_v; }
    // One token's K (V) row of a layer: n_head_kv head rows of kv_row_bytes(type.k (type.v),
    // head_dim).
    size_t k_head_bytes() const { return kv_row_bytes(type.k, head_dim_k); }
    size_t v_head_bytes() const { return kv_row_bytes(type.v, head_dim_v); }
    size_t k_row_bytes(int64_t layer) const {
        return size_t(n_head_kv[size_t(layer)]) * k_head_bytes();
    }
    size_t v_row_bytes(int64_t layer) const {
        return size_t(n_head_kv[size_t(layer)]) * v_head_bytes();
    }
    bool values_in_keys() const;
    // Bytes into a key head row where its values start (values_in_keys() only).
    size_t v_in_k_bytes() const { return kv_row_bytes(type.k, v_in_k); }
    // What a layer stores per token for its values: v_row_bytes, or 0 when they are read from
    // the keys. The byte counts below (and every cache's allocation) count stored bytes.
    size_t v_stored_row_bytes(int64_t layer) const {
        return values_in_keys() ? 0 : v_row_bytes(layer);
    }
    size_t bytes_per_token() const;  // K + V stored, over all layers
    bool windowed(int64_t layer) const {
        return window_only && size_t(layer) < layer_window.size() &&
               layer_window[size_t(layer)] > 0;
    }
    int64_t max_window() const;  // the largest window of a windowed layer; 0 when none is
    // K + V per token of the layers that store every token (all of them without window_only),
    // and per stored slot of the windowed ones.
    size_t full_bytes_per_token() const;
    size_t window_bytes_per_slot() const;
    // Throws Error naming the field when the shape cannot be built (sizes, head_dim not a
    // multiple of the quantization block, ...).
    void validate() const;
};

// What the UI's KV panel shows: the cache's blocks, who holds them and how full they are.
struct KvOccupancy {
    struct Block {
        int32_t owner = -1;  // sequence holding it (the first, when shared); -1 when free
        int32_t tokens = 0;  // slots in use
        int32_t refs = 0;    // sequences referencing it (> 1: shared, copy-on-write)
    };
    int64_t block_tokens = 0;
    size_t bytes_per_token = 0;  // what one more token adds (the global layers' rows)
    size_t bytes_allocated = 0;
    std::vector<Block> blocks;
    // A cache keeping only the window of sliding-window layers (KvShape::window_only): their
    // pool's blocks (tokens: slots of the block still stored).
    std::vector<Block> window_blocks;
};

class KvCache {
  public:
    virtual ~KvCache() = default;
    const KvShape& shape() const { return shape_; }

    // Tokens stored for a sequence: slots [0, length) hold valid K/V.
    virtual int64_t length(int64_t seq) const = 0;
    // After a forward step wrote slots up to n-1 (grow), or to drop a suffix (rollback, a new
    // prompt sharing only a prefix). Throws Error past the capacity (or a paged pool's budget).
    virtual void set_length(int64_t seq, int64_t n) = 0;
    virtual int64_t capacity(int64_t seq) const = 0;
    // The shortest length, other than 0, that seq may be cut back to (set_length) and go on
    // from: a cache keeping only the window of sliding-window layers has released the rows
    // before it. 0: any length.
    virtual int64_t min_cut_length(int64_t seq) const {
        (void)seq;
        return 0;
    }
    // Makes slots [begin, end) of seq writable before a forward step stores K/V there: a paged
    // cache allocates their blocks and copies a shared block first (copy-on-write). Throws Error
    // past the capacity or when the pool has no free block (the message says the budget).
    virtual void prepare(int64_t seq, int64_t begin, int64_t end) {
        (void)seq, (void)begin, (void)end;
    }

    // One slot of one layer: n_head_kv head rows of shape().k_head_bytes() (v_head_bytes())
    // bytes, head h's at data + h * head_stride (head_bytes apart in a token-major layout, a
    // whole head's region apart in a head-major one). When the values are read from the keys
    // (KvShape::values_in_keys) v_slot points into the key rows. Throws Error for a slot outside
    // the cache (or, paged, not allocated).
    struct Slot {
        std::byte* data = nullptr;
        size_t head_stride = 0;
        std::byte* head(int64_t h) const { return data + size_t(h) * head_stride; }
    };
    virtual Slot k_slot(int64_t layer, int64_t seq, int64_t pos) = 0;
    virtual Slot v_slot(int64_t layer, int64_t seq, int64_t pos) = 0;
    Slot k_slot(int64_t layer, int64_t seq, int64_t pos) const {
        return const_cast<KvCache*>(this)->k_slot(layer, seq, pos);
    }
    Slot v_slot(int64_t layer, int64_t seq, int64_t pos) const {
        return const_cast<KvCache*>(this)->v_slot(layer, seq, pos);
    }
    // A slot's K (V) row in token-major order, heads side by side (shape().k_row_bytes(layer)
    // bytes), whatever the layout: copied out to dst, or in from src. Host memory only. With the
    // values read from the keys, write_v writes nothing: the key row (write_k) holds them.
    void read_k(int64_t layer, int64_t seq, int64_t pos, void* dst) const;
    void read_v(int64_t layer, int64_t seq, int64_t pos, void* dst) const;
    void write_k(int64_t layer, int64_t seq, int64_t pos, const void* src);
    void write_v(int64_t layer, int64_t seq, int64_t pos, const void* src);

    // Consecutive positions pos, pos+1, ... of one layer and sequence whose head rows lie at a
    // fixed stride in memory: head h's row of pos at data + h * head_stride, each next position's
    // `stride` bytes further, for `rows` rows (1..n). Attention reads the cache run by run rather
    // than row by row. The default is one row per run; a cache with contiguous storage returns
    // longer runs. Throws like k_slot().
    struct Run {
        const std::byte* data = nullptr;
        size_t stride = 0;
        int64_t rows = 0;
        size_t head_stride = 0;
    };
    virtual Run k_run(int64_t layer, int64_t seq, int64_t pos, int64_t n) const {
        const Slot s = k_slot(layer, seq, pos);
        return {s.data, 0, n > 0 ? 1 : 0, s.head_stride};
    }
    virtual Run v_run(int64_t layer, int64_t seq, int64_t pos, int64_t n) const {
        const Slot s = v_slot(layer, seq, pos);
        return {s.data, 0, n > 0 ? 1 : 0, s.head_stride};
    }

    // Keeps only the slots keep[0] < keep[1] < ... (each < length): moves row keep[i] to slot i
    // in every layer, K and V, and sets the length to keep.size(). Keys keep the rotation of their
    // old slot; Model::shift_kv re-rotates them. Throws Error on an unsorted or out-of-range keep.
    virtual void compact(int64_t seq, std::span<const int64_t> keep);

    virtual KvOccupancy occupancy() const;  // default: n_ctx / block_tokens blocks per sequence
    virtual size_t bytes_allocated() const = 0;
    // Bytes seq's stored rows take (a window-only cache stores fewer rows of its window layers).
    virtual size_t bytes_used(int64_t seq) const {
        return size_t(length(seq)) * shape_.bytes_per_token();
    }

  protected:
    explicit KvCache(KvShape shape) : shape_(std::move(shape)) {}
    // Throws the Error compact() promises unless keep is ascending and below seq's length.
    void check_keep(int64_t seq, std::span<const int64_t> keep) const;
    KvShape shape_;
};

}  // namespace fluoro
