#include "kv/contiguous_kv.h"

#include <unistd.h>

#include <algorithm>
#include <new>
#include <string>

#include "core/error.h"

namespace fluoro {

ContiguousKvCache::ContiguousKvCache(KvShape shape) : KvCache(std::move(shape)) {
    const KvShape& s = shape_;
    s.validate();
    size_t offset = 0;
    const size_t kh = s.k_head_bytes(), vh = s.v_head_bytes(), n_ctx = size_t(s.n_ctx);
    const bool in_keys = s.values_in_keys();
    for (int64_t il = 0; il < s.n_layer; ++il) {
        k_slot_bytes_.push_back(s.head_major ? kh : s.k_row_bytes(il));
        k_head_stride_.push_back(s.head_major ? kh * n_ctx : kh);
        k_seq_stride_.push_back(s.k_row_bytes(il) * n_ctx);
        k_offset_.push_back(offset);
        offset += k_seq_stride_.back() * size_t(s.n_seq);
        if (in_keys) {  // the values are the key rows' dims from v_in_k on: nothing stored
            v_slot_bytes_.push_back(k_slot_bytes_.back());
            v_head_stride_.push_back(k_head_stride_.back());
            v_seq_stride_.push_back(k_seq_stride_.back());
            v_offset_.push_back(k_offset_.back() + s.v_in_k_bytes());
            continue;
        }
        v_slot_bytes_.push_back(s.head_major ? vh : s.v_row_bytes(il));
        v_head_stride_.push_back(s.head_major ? vh * n_ctx : vh);
        v_seq_stride_.push_back(s.v_row_bytes(il) * n_ctx);
        v_offset_.push_back(offset);
        offset += v_seq_stride_.back() * size_t(s.n_seq);
    }
    bytes_ = offset;
    // More than the machine's memory can never work: say so with both sizes instead of letting
    // the allocator (or the OOM killer) decide.
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page > 0 && bytes_ / size_t(page) > size_t(pages))
        throw Error("KV cache: cannot allocate " + std::to_string(bytes_ >> 20) + " MiB for " +
                    std::to_string(s.n_ctx) + " tokens x " + std::to_string(s.n_seq) +
                    " sequences: the machine has " +
                    std::to_string((size_t(pages) * size_t(page)) >> 20) +
                    " MiB of memory; use a smaller context");
    data_.reset(new (std::nothrow) std::byte[bytes_]);
    if (!data_)
        throw Error("KV cache: cannot allocate " + std::to_string(bytes_ >> 20) + " MiB for " +
                    std::to_string(s.n_ctx) + " tokens x " + std::to_string(s.n_seq) +
                    " sequences; use a smaller context");
    length_.assign(size_t(s.n_seq), 0);
}

void ContiguousKvCache::check(int64_t layer, int64_t seq, int64_t pos) const {
    if (layer < 0 || layer >= shape_.n_layer || seq < 0 || seq >= shape_.n_seq || pos < 0 ||
        pos >= shape_.n_ctx)
        throw Error("KV cache: row (layer " + std::to_string(layer) + ", sequence " +
                    std::to_string(seq) + ", position " + std::to_string(pos) +
                    ") is outside the cache (context " + std::to_string(shape_.n_ctx) + ")");
}

int64_t ContiguousKvCache::length(int64_t seq) const {
    check(0, seq, 0);
    return length_[size_t(seq)];
}

void ContiguousKvCache::set_length(int64_t seq, int64_t n) {
    check(0, seq, 0);
    if (n < 0 || n > shape_.n_ctx)
        throw Error("KV cache: length " + std::to_string(n) + " exceeds the context of " +
                    std::to_string(shape_.n_ctx) + " tokens");
    length_[size_t(seq)] = n;
}

KvCache::Slot ContiguousKvCache::k_slot(int64_t layer, int64_t seq, int64_t pos) {
    check(layer, seq, pos);
    const size_t l = size_t(layer);
    return {data_.get() + k_offset_[l] + size_t(seq) * k_seq_stride_[l] +
                size_t(pos) * k_slot_bytes_[l],
            k_head_stride_[l]};
}

KvCache::Slot ContiguousKvCache::v_slot(int64_t layer, int64_t seq, int64_t pos) {
    check(layer, seq, pos);
    const size_t l = size_t(layer);
    return {data_.get() + v_offset_[l] + size_t(seq) * v_seq_stride_[l] +
                size_t(pos) * v_slot_bytes_[l],
            v_head_stride_[l]};
}

KvCache::Run ContiguousKvCache::k_run(int64_t layer, int64_t seq, int64_t pos, int64_t n) const {
    const Slot s = KvCache::k_slot(layer, seq, pos);
    if (n > 1) check(layer, seq, pos + n - 1);
    return {s.data, k_slot_bytes_[size_t(layer)], std::max<int64_t>(n, 0), s.head_stride};
}

KvCache::Run ContiguousKvCache::v_run(int64_t layer, int64_t seq, int64_t pos, int64_t n) const {
    const Slot s = KvCache::v_slot(layer, seq, pos);
    if (n > 1) check(layer, seq, pos + n - 1);
    return {s.data, v_slot_bytes_[size_t(layer)], std::max<int64_t>(n, 0), s.head_stride};
}

}  // namespace fluoro
