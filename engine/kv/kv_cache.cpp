#include "kv/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"

namespace fluoro {

size_t kv_row_bytes(KvType t, int64_t elems) {
    if (elems < 0) throw Error("KV row of " + std::to_string(elems) + " values");
    if (kv_type_quantized(t) && elems % kKvQuantBlock != 0)
        throw Error("KV type " + std::string(kv_type_name(t)) + " stores blocks of " +
                    std::to_string(kKvQuantBlock) + " values, but a head row has " +
                    std::to_string(elems) + "; use f16 for this model");
    const KvTypeInfo& info = kv_type_info(t);
    return size_t(elems / info.block_elems) * info.block_bytes;
}

size_t KvShape::bytes_per_token() const {
    size_t total = 0;
    for (int64_t il = 0; il < n_layer; ++il) total += k_row_bytes(il) + v_stored_row_bytes(il);
    return total;
}

bool KvShape::values_in_keys() const {
    return v_in_k >= 0 && type.v == type.k &&
           (!kv_type_quantized(type.k) || v_in_k % kKvQuantBlock == 0);
}

int64_t KvShape::max_window() const {
    int64_t w = 0;
    for (int64_t il = 0; il < n_layer; ++il)
        if (windowed(il)) w = std::max(w, layer_window[size_t(il)]);
    return w;
}

size_t KvShape::full_bytes_per_token() const {
    size_t total = 0;
    for (int64_t il = 0; il < n_layer; ++il)
        if (!windowed(il)) total += k_row_bytes(il) + v_stored_row_bytes(il);
    return total;
}

size_t KvShape::window_bytes_per_slot() const {
    return bytes_per_token() - full_bytes_per_token();
}

void KvShape::validate() const {
    if (n_seq < 1 || n_ctx < 1 || n_layer < 1 || int64_t(n_head_kv.size()) != n_layer)
        throw Error("KV cache: invalid shape (n_seq " + std::to_string(n_seq) + ", n_ctx " +
                    std::to_string(n_ctx) + ", n_layer " + std::to_string(n_layer) + ")");
    if (head_dim_k < 1 || head_dim_v < 1)
        throw Error("KV cache: invalid head dimensions " + std::to_string(head_dim_k) + "/" +
                    std::to_string(head_dim_v));
    for (int64_t h : n_head_kv)
        if (h < 1) throw Error("KV cache: a layer has " + std::to_string(h) + " KV heads");
    if (block_tokens < 1)
        throw Error("KV cache: block size " + std::to_string(block_tokens) + " must be >= 1");
    if (pool_tokens < 0)
        throw Error("KV cache: pool of " + std::to_string(pool_tokens) + " tokens");
    if (!layer_window.empty() && int64_t(layer_window.size()) != n_layer)
        throw Error("KV cache: " + std::to_string(layer_window.size()) + " layer windows for " +
                    std::to_string(n_layer) + " layers");
    for (int64_t w : layer_window)
        if (w < 0) throw Error("KV cache: a layer window of " + std::to_string(w) + " tokens");
    if (window_slack < 0 || step_tokens < 1)
        throw Error("KV cache: window slack " + std::to_string(window_slack) + " / step " +
                    std::to_string(step_tokens) + " tokens");
    (void)kv_row_bytes(type.k, head_dim_k);  // throws for a head row the type cannot store
    (void)kv_row_bytes(type.v, head_dim_v);
    if (v_in_k >= 0 && v_in_k + head_dim_v > head_dim_k)
        throw Error("KV cache: values at key dims [" + std::to_string(v_in_k) + ", " +
                    std::to_string(v_in_k + head_dim_v) + ") of key rows of " +
                    std::to_string(head_dim_k));
}

void KvCache::check_keep(int64_t seq, std::span<const int64_t> keep) const {
    const int64_t n = length(seq);
    for (size_t i = 0; i < keep.size(); ++i)
        if (keep[i] < 0 || keep[i] >= n || (i && keep[i] <= keep[i - 1]))
            throw Error("KV cache: compaction needs ascending slots below the length " +
                        std::to_string(n) + " (slot " + std::to_string(keep[i]) + " at index " +
                        std::to_string(i) + ")");
}

namespace {

// Copies a slot's head rows between `slot` and a token-major row at `row` (to_row: out of the
// cache).
void copy_heads(KvCache::Slot slot, int64_t n_head, size_t head_bytes, std::byte* row,
                bool to_row) {
    for (int64_t h = 0; h < n_head; ++h) {
        std::byte* at = row + size_t(h) * head_bytes;
        if (to_row)
            std::memcpy(at, slot.head(h), head_bytes);
        else
            std::memcpy(slot.head(h), at, head_bytes);
    }
}

}  // namespace

void KvCache::read_k(int64_t layer, int64_t seq, int64_t pos, void* dst) const {
    copy_heads(k_slot(layer, seq, pos), shape_.n_head_kv[size_t(layer)], shape_.k_head_bytes(),
               static_cast<std::byte*>(dst), true);
}

void KvCache::read_v(int64_t layer, int64_t seq, int64_t pos, void* dst) const {
    copy_heads(v_slot(layer, seq, pos), shape_.n_head_kv[size_t(layer)], shape_.v_head_bytes(),
               static_cast<std::byte*>(dst), true);
}

void KvCache::write_k(int64_t layer, int64_t seq, int64_t pos, const void* src) {
    copy_heads(k_slot(layer, seq, pos), shape_.n_head_kv[size_t(layer)], shape_.k_head_bytes(),
               const_cast<std::byte*>(static_cast<const std::byte*>(src)), false);
}

void KvCache::write_v(int64_t layer, int64_t seq, int64_t pos, const void* src) {
    if (shape_.values_in_keys()) return;  // the key row holds them
    copy_heads(v_slot(layer, seq, pos), shape_.n_head_kv[size_t(layer)], shape_.v_head_bytes(),
               const_cast<std::byte*>(static_cast<const std::byte*>(src)), false);
}

void KvCache::compact(int64_t seq, std::span<const int64_t> keep) {
    check_keep(seq, keep);
    const bool move_v = !shape_.values_in_keys();  // else moving the keys moved them
    for (int64_t il = 0; il < shape_.n_layer; ++il) {
        const int64_t n_head = shape_.n_head_kv[size_t(il)];
        const size_t kb = shape_.k_head_bytes(), vb = shape_.v_head_bytes();
        for (size_t i = 0; i < keep.size(); ++i) {
            if (keep[i] == int64_t(i)) continue;  // keep[i] >= i: moving down never overwrites
            const Slot kd = k_slot(il, seq, int64_t(i)), ks = k_slot(il, seq, keep[i]);
            const Slot vd = v_slot(il, seq, int64_t(i)), vs = v_slot(il, seq, keep[i]);
            for (int64_t h = 0; h < n_head; ++h) {
                std::memcpy(kd.head(h), ks.head(h), kb);
                if (move_v) std::memcpy(vd.head(h), vs.head(h), vb);
            }
        }
    }
    set_length(seq, int64_t(keep.size()));
}

KvOccupancy KvCache::occupancy() const {
    KvOccupancy o;
    o.block_tokens = shape_.block_tokens;
    o.bytes_per_token = shape_.bytes_per_token();
    o.bytes_allocated = bytes_allocated();
    for (int64_t s = 0; s < shape_.n_seq; ++s) {
        const int64_t len = length(s);
        for (int64_t b = 0; b * shape_.block_tokens < shape_.n_ctx; ++b) {
            const int64_t used =
                std::clamp<int64_t>(len - b * shape_.block_tokens, 0, shape_.block_tokens);
            o.blocks.push_back({used > 0 ? int32_t(s) : -1, int32_t(used), used > 0 ? 1 : 0});
        }
    }
    return o;
}

}  // namespace fluoro
