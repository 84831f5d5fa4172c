// The KV cache seen through an interface: every reader (attention on any backend, the UI's
// occupancy view) goes through row accessors, so a contiguous cache (kv/contiguous_kv.h) and the
// paged cache of a later issue are interchangeable. Rows live in backend-owned memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace fluoro {

enum class KvType { F32, F16 };
std::string_view kv_type_name(KvType t);
size_t kv_type_size(KvType t);

struct KvShape {
    int64_t n_layer = 0;
    std::vector<int64_t> n_head_kv;  // per layer
    int64_t head_dim_k = 0;
    int64_t head_dim_v = 0;
    KvType type = KvType::F16;
    int64_t n_seq = 1;  // sequences (conversation slots)
    int64_t n_ctx = 0;  // tokens per sequence

    int64_t k_row_elems(int64_t layer) const { return n_head_kv[size_t(layer)] * head_dim_k; }
    int64_t v_row_elems(int64_t layer) const { return n_head_kv[size_t(layer)] * head_dim_v; }
    size_t bytes_per_token() const;  // K + V over all layers
};

class KvCache {
  public:
    virtual ~KvCache() = default;
    const KvShape& shape() const { return shape_; }

    // Tokens stored for a sequence: positions [0, length) hold valid K/V.
    virtual int64_t length(int64_t seq) const = 0;
    // After a forward step wrote positions up to n-1 (grow), or to drop a suffix (rollback,
    // a new prompt sharing only a prefix). Throws Error past the capacity.
    virtual void set_length(int64_t seq, int64_t n) = 0;
    virtual int64_t capacity(int64_t seq) const = 0;

    // One token's row: n_head_kv * head_dim elements of shape().type, heads contiguous.
    virtual void* k_row(int64_t layer, int64_t seq, int64_t pos) = 0;
    virtual void* v_row(int64_t layer, int64_t seq, int64_t pos) = 0;
    const void* k_row(int64_t layer, int64_t seq, int64_t pos) const {
        return const_cast<KvCache*>(this)->k_row(layer, seq, pos);
    }
    const void* v_row(int64_t layer, int64_t seq, int64_t pos) const {
        return const_cast<KvCache*>(this)->v_row(layer, seq, pos);
    }

    // Consecutive positions pos, pos+1, ... of one layer and sequence that lie at a fixed stride
    // in memory: the row at pos, the stride in bytes and how many rows (1..n) follow it that way.
    // Attention reads the cache run by run rather than row by row. The default is one row per
    // run; a cache with contiguous storage returns longer runs. Throws like k_row().
    struct Run {
        const std::byte* data = nullptr;
        size_t stride = 0;
        int64_t rows = 0;
    };
    virtual Run k_run(int64_t layer, int64_t seq, int64_t pos, int64_t n) const {
        return {static_cast<const std::byte*>(k_row(layer, seq, pos)), 0, n > 0 ? 1 : 0};
    }
    virtual Run v_run(int64_t layer, int64_t seq, int64_t pos, int64_t n) const {
        return {static_cast<const std::byte*>(v_row(layer, seq, pos)), 0, n > 0 ? 1 : 0};
    }

    virtual size_t bytes_allocated() const = 0;

  protected:
    explicit KvCache(KvShape shape) : shape_(std::move(shape)) {}
    KvShape shape_;
};

}  // namespace fluoro
