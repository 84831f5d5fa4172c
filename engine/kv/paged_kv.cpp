#include "kv/paged_kv.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <string>

#include "core/error.h"

namespace fluoro {
namespace {

std::string mib(long double bytes) {
    return std::to_string(uint64_t(bytes / (1024.0L * 1024.0L))) + " MiB";
}

// Blocks of the pool; throws the allocation Error naming the MiB when it cannot fit in the
// machine's memory (checked before anything is allocated, also for counts past 2^31 blocks).
int64_t pool_blocks(const KvShape& s) {
    s.validate();
    // pool_tokens 0: every sequence can fill its context at once, a partial last block each.
    const int64_t per_seq = (s.n_ctx + s.block_tokens - 1) / s.block_tokens;
    const long double blocks =
        s.pool_tokens == 0 ? (long double)s.n_seq * (long double)per_seq
                           : (long double)((s.pool_tokens + s.block_tokens - 1) / s.block_tokens);
    const long double bytes =
        blocks * (long double)s.block_tokens * (long double)s.bytes_per_token();
    const std::string what = "KV cache: cannot allocate " + mib(bytes) + " for a pool of " +
                             std::to_string(uint64_t(blocks)) + " blocks x " +
                             std::to_string(s.block_tokens) + " tokens";
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    const long double memory = (long double)pages * (long double)page;
    if (pages > 0 && page > 0 && bytes > memory)
        throw Error(what + ": the machine has " + mib(memory) +
                    " of memory; use a smaller context or pool");
    if (blocks > (long double)std::numeric_limits<int32_t>::max())
        throw Error(what + ": more than 2^31 blocks; use larger blocks or a smaller pool");
    return int64_t(blocks);
}

}  // namespace

PagedKvCache::PagedKvCache(KvShape shape, std::shared_ptr<KvMemory> memory)
    : KvCache(std::move(shape)),
      bt_(shape_.block_tokens),
      pool_(pool_blocks(shape_)),
      memory_(std::move(memory)) {
    if (!memory_) throw Error("KV cache: no memory to allocate the pool in");
    const KvShape& s = shape_;
    const size_t rows = size_t(pool_.size()) * size_t(bt_);
    std::vector<size_t> k_offset, v_offset;
    size_t offset = 0;
    for (int64_t il = 0; il < s.n_layer; ++il) {
        k_row_bytes_.push_back(s.k_row_bytes(il));
        v_row_bytes_.push_back(s.v_row_bytes(il));
        k_offset.push_back(offset);
        offset += k_row_bytes_.back() * rows;
        v_offset.push_back(offset);
        offset += v_row_bytes_.back() * rows;
    }
    bytes_ = offset;
    data_ = memory_->allocate(bytes_);
    if (data_ == nullptr)
        throw Error("KV cache: cannot allocate " + mib((long double)bytes_) + " of " +
                    std::string(memory_->name()) + " memory for a pool of " +
                    std::to_string(pool_.size()) + " blocks x " + std::to_string(bt_) +
                    " tokens; use a smaller context or pool");
    for (int64_t il = 0; il < s.n_layer; ++il) {
        k_base_.push_back(data_ + k_offset[size_t(il)]);
        v_base_.push_back(data_ + v_offset[size_t(il)]);
    }
    tables_.resize(size_t(s.n_seq));
    length_.assign(size_t(s.n_seq), 0);
}

PagedKvCache::~PagedKvCache() {
    memory_->release(data_);
}

PagedKvCache::LayerStorage PagedKvCache::layer_storage(int64_t layer) const {
    if (layer < 0 || layer >= int64_t(k_base_.size()))
        throw Error("KV cache: layer " + std::to_string(layer) + " of " +
                    std::to_string(k_base_.size()));
    const size_t l = size_t(layer);
    return {k_base_[l], v_base_[l], k_row_bytes_[l], v_row_bytes_[l]};
}

void PagedKvCache::check_seq(int64_t seq) const {
    if (seq < 0 || seq >= shape_.n_seq)
        throw Error("KV cache: sequence " + std::to_string(seq) + " is outside the cache (" +
                    std::to_string(shape_.n_seq) + " sequences)");
}

int64_t PagedKvCache::length(int64_t seq) const {
    check_seq(seq);
    return length_[size_t(seq)];
}

std::span<const int32_t> PagedKvCache::blocks_of(int64_t seq) const {
    check_seq(seq);
    return tables_[size_t(seq)];
}

void PagedKvCache::require_free(int64_t needed, int64_t seq, int64_t begin, int64_t end) const {
    if (needed <= pool_.free_blocks()) return;
    const int64_t tokens = pool_.size() * bt_;
    throw Error("KV cache: the pool of " + std::to_string(tokens) + " tokens (" +
                mib((long double)bytes_) + ", " + std::to_string(pool_.size()) + " blocks of " +
                std::to_string(bt_) + ") is full: sequence " + std::to_string(seq) + " needs " +
                std::to_string(needed) + " more blocks for slots [" + std::to_string(begin) + ", " +
                std::to_string(end) + ") and " + std::to_string(pool_.free_blocks()) +
                " are free; use a KV policy (sliding window, StreamingLLM, ...) or a larger pool");
}

void PagedKvCache::copy_block(int32_t from, int32_t to) {
    const size_t first_from = size_t(from) * size_t(bt_), first_to = size_t(to) * size_t(bt_);
    for (size_t il = 0; il < k_base_.size(); ++il) {
        const size_t kb = k_row_bytes_[il], vb = v_row_bytes_[il];
        memory_->move(k_base_[il] + first_to * kb, k_base_[il] + first_from * kb, size_t(bt_) * kb);
        memory_->move(v_base_[il] + first_to * vb, v_base_[il] + first_from * vb, size_t(bt_) * vb);
    }
}

void PagedKvCache::set_length(int64_t seq, int64_t n) {
    check_seq(seq);
    if (n < 0 || n > shape_.n_ctx)
        throw Error("KV cache: length " + std::to_string(n) + " of sequence " +
                    std::to_string(seq) + " is outside the context of " +
                    std::to_string(shape_.n_ctx) + " tokens");
    std::vector<int32_t>& table = tables_[size_t(seq)];
    const size_t needed = size_t((n + bt_ - 1) / bt_);
    if (table.size() < needed) {
        require_free(int64_t(needed - table.size()), seq, length_[size_t(seq)], n);
        while (table.size() < needed) table.push_back(pool_.acquire());
    }
    while (table.size() > needed) {
        pool_.release(table.back());
        table.pop_back();
    }
    length_[size_t(seq)] = n;
}

void PagedKvCache::prepare(int64_t seq, int64_t begin, int64_t end) {
    check_seq(seq);
    if (begin < 0 || begin > end || end > shape_.n_ctx)
        throw Error("KV cache: slots [" + std::to_string(begin) + ", " + std::to_string(end) +
                    ") of sequence " + std::to_string(seq) + " are outside the context of " +
                    std::to_string(shape_.n_ctx) + " tokens");
    if (begin == end) return;
    std::vector<int32_t>& table = tables_[size_t(seq)];
    const size_t first = size_t(begin / bt_), last = size_t((end + bt_ - 1) / bt_);
    // Count first, then change: a full pool leaves the cache as it was.
    int64_t needed = int64_t(last > table.size() ? last - table.size() : 0);
    for (size_t i = first; i < std::min(last, table.size()); ++i)
        needed += pool_.refs(table[i]) > 1;
    require_free(needed, seq, begin, end);
    for (size_t i = first; i < std::min(last, table.size()); ++i) {
        if (pool_.refs(table[i]) == 1) continue;
        const int32_t fresh = pool_.acquire();  // copy-on-write of a shared block
        copy_block(table[i], fresh);
        pool_.release(table[i]);
        table[i] = fresh;
    }
    while (table.size() < last) table.push_back(pool_.acquire());
}

std::byte* PagedKvCache::row(bool k, int64_t layer, int64_t seq, int64_t pos) const {
    if (layer < 0 || layer >= shape_.n_layer || seq < 0 || seq >= shape_.n_seq || pos < 0 ||
        pos >= shape_.n_ctx)
        throw Error("KV cache: row (layer " + std::to_string(layer) + ", sequence " +
                    std::to_string(seq) + ", position " + std::to_string(pos) +
                    ") is outside the cache (context " + std::to_string(shape_.n_ctx) + ")");
    const std::vector<int32_t>& table = tables_[size_t(seq)];
    const size_t i = size_t(pos / bt_);
    if (i >= table.size())
        throw Error("KV cache: row (layer " + std::to_string(layer) + ", sequence " +
                    std::to_string(seq) + ", position " + std::to_string(pos) +
                    ") has no block: the sequence holds " + std::to_string(table.size()) +
                    " blocks of " + std::to_string(bt_) + " tokens (prepare() the slot first)");
    const size_t slot = size_t(table[i]) * size_t(bt_) + size_t(pos % bt_);
    const size_t l = size_t(layer);
    return k ? k_base_[l] + slot * k_row_bytes_[l] : v_base_[l] + slot * v_row_bytes_[l];
}

void* PagedKvCache::k_row(int64_t layer, int64_t seq, int64_t pos) {
    return row(true, layer, seq, pos);
}

void* PagedKvCache::v_row(int64_t layer, int64_t seq, int64_t pos) {
    return row(false, layer, seq, pos);
}

KvCache::Run PagedKvCache::run(bool k, int64_t layer, int64_t seq, int64_t pos, int64_t n) const {
    const std::byte* data = row(k, layer, seq, pos);
    if (n <= 0) return {data, 0, 0};
    if (n > 1) (void)row(k, layer, seq, pos + n - 1);  // the whole range exists (Error otherwise)
    // Rows to the end of pos's block, then on through blocks that follow it in the pool too.
    const std::vector<int32_t>& table = tables_[size_t(seq)];
    size_t i = size_t(pos / bt_);
    int64_t rows = bt_ - pos % bt_;
    while (rows < n && table[i + 1] == table[i] + 1) {
        ++i;
        rows += bt_;
    }
    return {data, k ? k_row_bytes_[size_t(layer)] : v_row_bytes_[size_t(layer)], std::min(rows, n)};
}

KvCache::Run PagedKvCache::k_run(int64_t layer, int64_t seq, int64_t pos, int64_t n) const {
    return run(true, layer, seq, pos, n);
}

KvCache::Run PagedKvCache::v_run(int64_t layer, int64_t seq, int64_t pos, int64_t n) const {
    return run(false, layer, seq, pos, n);
}

void PagedKvCache::compact(int64_t seq, std::span<const int64_t> keep) {
    check_keep(seq, keep);
    const int64_t kept = int64_t(keep.size());
    int64_t first = 0;
    while (first < kept && keep[size_t(first)] == first) ++first;
    if (first < kept) {
        // The slots written, [first, kept), must not be shared; rows are read from blocks
        // that may be (a copied block holds the same rows).
        prepare(seq, first, kept);
        // Moves of consecutive rows that stay inside one block on both sides: (dst, src, rows).
        struct Move {
            int64_t dst, src, rows;
        };
        std::vector<Move> moves;
        for (int64_t i = first; i < kept; ++i) {
            const int64_t src = keep[size_t(i)];
            if (!moves.empty()) {
                Move& m = moves.back();
                if (src == m.src + m.rows && i % bt_ != 0 && src % bt_ != 0) {
                    ++m.rows;
                    continue;
                }
            }
            moves.push_back({i, src, 1});
        }
        // Ascending order is safe: every destination lies below its source (keep[i] >= i), and
        // below every later source. memmove: a move inside one block may overlap itself.
        const std::vector<int32_t>& table = tables_[size_t(seq)];
        const auto slot = [&](int64_t pos) {
            return size_t(table[size_t(pos / bt_)]) * size_t(bt_) + size_t(pos % bt_);
        };
        for (size_t il = 0; il < k_base_.size(); ++il) {
            const size_t kb = k_row_bytes_[il], vb = v_row_bytes_[il];
            for (const Move& m : moves) {
                const size_t d = slot(m.dst), s = slot(m.src);
                memory_->move(k_base_[il] + d * kb, k_base_[il] + s * kb, size_t(m.rows) * kb);
                memory_->move(v_base_[il] + d * vb, v_base_[il] + s * vb, size_t(m.rows) * vb);
            }
        }
    }
    set_length(seq, kept);
}

void PagedKvCache::share_prefix(int64_t src_seq, int64_t dst_seq, int64_t n_tokens) {
    check_seq(src_seq);
    check_seq(dst_seq);
    if (src_seq == dst_seq)
        throw Error("KV cache: share_prefix from sequence " + std::to_string(src_seq) +
                    " to itself");
    if (n_tokens < 0 || n_tokens > length_[size_t(src_seq)])
        throw Error("KV cache: share_prefix of " + std::to_string(n_tokens) +
                    " tokens from sequence " + std::to_string(src_seq) + ", which holds " +
                    std::to_string(length_[size_t(src_seq)]));
    const std::vector<int32_t>& src = tables_[size_t(src_seq)];
    std::vector<int32_t> shared(src.begin(), src.begin() + (n_tokens + bt_ - 1) / bt_);
    for (int32_t b : shared) pool_.retain(b);  // before releasing: dst may hold the same blocks
    for (int32_t b : tables_[size_t(dst_seq)]) pool_.release(b);
    tables_[size_t(dst_seq)] = std::move(shared);
    length_[size_t(dst_seq)] = n_tokens;
}

KvOccupancy PagedKvCache::occupancy() const {
    KvOccupancy o;
    o.block_tokens = bt_;
    o.bytes_per_token = shape_.bytes_per_token();
    o.bytes_allocated = bytes_;
    o.blocks.resize(size_t(pool_.size()));
    for (int32_t b = 0; b < int32_t(pool_.size()); ++b) o.blocks[size_t(b)].refs = pool_.refs(b);
    for (size_t s = 0; s < tables_.size(); ++s) {
        const std::vector<int32_t>& table = tables_[s];
        for (size_t i = 0; i < table.size(); ++i) {
            KvOccupancy::Block& blk = o.blocks[size_t(table[i])];
            if (blk.owner < 0) blk.owner = int32_t(s);
            const int64_t used = std::clamp<int64_t>(length_[s] - int64_t(i) * bt_, 0, bt_);
            blk.tokens = std::max(blk.tokens, int32_t(used));
        }
    }
    return o;
}

void PagedKvCache::check_invariants() const {
    pool_.check_invariants();
    std::vector<int64_t> listed(size_t(pool_.size()), 0);
    std::vector<int64_t> last_table(size_t(pool_.size()), -1);  // duplicates within one table
    for (size_t s = 0; s < tables_.size(); ++s) {
        const std::vector<int32_t>& table = tables_[s];
        const auto where = [&](size_t i) {
            return "KV cache: sequence " + std::to_string(s) + ", table entry " +
                   std::to_string(i) + " (block " + std::to_string(table[i]) + ")";
        };
        if (int64_t(table.size()) * bt_ < length_[s])
            throw Error("KV cache: sequence " + std::to_string(s) + " has length " +
                        std::to_string(length_[s]) + " but " + std::to_string(table.size()) +
                        " blocks of " + std::to_string(bt_));
        for (size_t i = 0; i < table.size(); ++i) {
            if (table[i] < 0 || table[i] >= pool_.size())
                throw Error(where(i) + ": outside the pool of " + std::to_string(pool_.size()));
            if (pool_.refs(table[i]) < 1) throw Error(where(i) + ": the block is free");
            if (last_table[size_t(table[i])] == int64_t(s))
                throw Error(where(i) + ": listed twice in the table");
            last_table[size_t(table[i])] = int64_t(s);
            ++listed[size_t(table[i])];
        }
    }
    for (int32_t b = 0; b < int32_t(pool_.size()); ++b)
        if (listed[size_t(b)] > pool_.refs(b))
            throw Error("KV cache: block " + std::to_string(b) + " is in " +
                        std::to_string(listed[size_t(b)]) + " tables but has " +
                        std::to_string(pool_.refs(b)) + " references");
}

}  // namespace fluoro
