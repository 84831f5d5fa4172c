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

// Blocks of a pool whose blocks hold `bytes_per_token` per slot; throws the allocation Error
// naming the MiB when it cannot fit in the machine's memory (checked before anything is
// allocated, also for counts past 2^31 blocks).
int64_t checked_blocks(long double blocks, const KvShape& s, size_t bytes_per_token) {
    const long double bytes = blocks * (long double)s.block_tokens * (long double)bytes_per_token;
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

int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

// Blocks per sequence of the window group: the window and the slack behind the length, the
// step being written, and a partial block at each end. 0 when that is no fewer than the whole
// context's blocks (then the windowed layers store every token: nothing to save).
int64_t window_blocks_per_seq(const KvShape& s) {
    const int64_t w = s.max_window();
    if (w == 0) return 0;
    const int64_t per_seq = ceil_div(w + s.window_slack + s.step_tokens, s.block_tokens) + 2;
    return per_seq < ceil_div(s.n_ctx, s.block_tokens) ? per_seq : 0;
}

// Blocks of the global pool. pool_tokens 0: every sequence can fill its context at once, a
// partial last block each.
int64_t global_blocks(const KvShape& s, size_t bytes_per_token) {
    const int64_t per_seq = ceil_div(s.n_ctx, s.block_tokens);
    const long double blocks = s.pool_tokens == 0
                                   ? (long double)s.n_seq * (long double)per_seq
                                   : (long double)ceil_div(s.pool_tokens, s.block_tokens);
    return checked_blocks(blocks, s, bytes_per_token);
}

// The global pool's and the window pool's blocks, and the bytes per slot of each.
struct Layout {
    int64_t global_blocks = 0, window_blocks = 0;
    size_t global_bytes = 0, window_bytes = 0;
};

Layout layout(const KvShape& s) {
    s.validate();
    Layout l;
    const int64_t window_per_seq = window_blocks_per_seq(s);
    l.global_bytes = window_per_seq > 0 ? s.full_bytes_per_token() : s.bytes_per_token();
    l.window_bytes = s.bytes_per_token() - l.global_bytes;
    l.global_blocks = global_blocks(s, l.global_bytes);
    // Every sequence its window at once; with a pool shared by the sequences (pool_tokens), as
    // many windows as the pool holds contexts (a prefix cache evicts entries to make room:
    // PagedKvCache::window_shortfall).
    const int64_t windows = s.pool_tokens == 0
                                ? s.n_seq
                                : std::clamp<int64_t>(ceil_div(s.pool_tokens, s.n_ctx), 1, s.n_seq);
    if (window_per_seq > 0)
        l.window_blocks =
            checked_blocks((long double)windows * (long double)window_per_seq, s, l.window_bytes);
    return l;
}

}  // namespace

size_t paged_kv_bytes(const KvShape& shape) {
    const Layout l = layout(shape);
    return size_t(shape.block_tokens) *
           (size_t(l.global_blocks) * l.global_bytes + size_t(l.window_blocks) * l.window_bytes);
}

PagedKvCache::PagedKvCache(KvShape shape, std::shared_ptr<KvMemory> memory)
    : KvCache(std::move(shape)), bt_(shape_.block_tokens), memory_(std::move(memory)) {
    if (!memory_) throw Error("KV cache: no memory to allocate the pool in");
    const KvShape& s = shape_;
    const Layout l = layout(s);
    const bool split = l.window_blocks > 0;
    layer_group_.assign(size_t(s.n_layer), 0);
    for (int64_t il = 0; il < s.n_layer; ++il)
        if (split && s.windowed(il)) layer_group_[size_t(il)] = 1;
    groups_.emplace_back(l.global_blocks);
    if (split) {
        groups_.emplace_back(l.window_blocks);
        groups_[1].window = s.max_window();
    }
    for (Group& g : groups_) {
        g.tables.resize(size_t(s.n_seq));
        g.first_held.assign(size_t(s.n_seq), 0);
    }
    std::vector<size_t> k_offset, v_offset;
    size_t offset = 0;
    for (int64_t il = 0; il < s.n_layer; ++il) {
        Group& g = groups_[size_t(layer_group_[size_t(il)])];
        g.layers.push_back(il);
        const size_t rows = size_t(g.pool.size()) * size_t(bt_);
        k_row_bytes_.push_back(s.k_row_bytes(il));
        const size_t kh = s.k_head_bytes(), vh = s.v_head_bytes();
        k_slot_bytes_.push_back(s.head_major ? kh : k_row_bytes_.back());
        k_head_stride_.push_back(s.head_major ? kh * rows : kh);
        k_offset.push_back(offset);
        offset += k_row_bytes_.back() * rows;
        if (s.values_in_keys()) {  // the values are the key rows' dims from v_in_k on
            v_row_bytes_.push_back(k_row_bytes_.back());
            v_slot_bytes_.push_back(k_slot_bytes_.back());
            v_head_stride_.push_back(k_head_stride_.back());
            v_offset.push_back(k_offset.back() + s.v_in_k_bytes());
            continue;
        }
        v_row_bytes_.push_back(s.v_row_bytes(il));
        v_slot_bytes_.push_back(s.head_major ? vh : v_row_bytes_.back());
        v_head_stride_.push_back(s.head_major ? vh * rows : vh);
        v_offset.push_back(offset);
        offset += v_row_bytes_.back() * rows;
    }
    bytes_ = offset;
    data_ = memory_->allocate(bytes_);
    if (data_ == nullptr)
        throw Error("KV cache: cannot allocate " + mib((long double)bytes_) + " of " +
                    std::string(memory_->name()) + " memory for a pool of " +
                    std::to_string(groups_[0].pool.size()) + " blocks x " + std::to_string(bt_) +
                    " tokens; use a smaller context or pool");
    for (int64_t il = 0; il < s.n_layer; ++il) {
        k_base_.push_back(data_ + k_offset[size_t(il)]);
        v_base_.push_back(data_ + v_offset[size_t(il)]);
    }
    length_.assign(size_t(s.n_seq), 0);
}

PagedKvCache::~PagedKvCache() {
    memory_->release(data_);
}

PagedKvCache::LayerStorage PagedKvCache::layer_storage(int64_t layer) const {
    if (layer < 0 || layer >= int64_t(k_base_.size()))
        throw Error("KV cache: layer " + std::to_string(layer) + " of " +
                    std::to_string(k_base_.size()));
    if (layer_group_[size_t(layer)] != 0)
        throw Error("KV cache: layer " + std::to_string(layer) +
                    " keeps only its window, in a pool of its own that blocks_of() does not map");
    if (shape_.head_major)
        throw Error(
            "KV cache: layer_storage describes token-major rows; this cache is "
            "head-major");
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
    return groups_[0].tables[size_t(seq)];
}

int64_t PagedKvCache::window_shortfall(int64_t seq) const {
    check_seq(seq);
    if (!window_only()) return 0;
    const Group& g = groups_[1];
    int64_t held = 0;
    for (const int32_t b : g.tables[size_t(seq)]) held += b >= 0;
    const int64_t need = window_blocks_per_seq(shape_) + 1 - held;  // + a copy-on-write
    return std::max<int64_t>(0, need - g.pool.free_blocks());
}

size_t PagedKvCache::bytes_if_full() const {
    if (!window_only()) return bytes_;
    KvShape full = shape_;
    full.window_only = false;
    return paged_kv_bytes(full);
}

int64_t PagedKvCache::min_cut_length(int64_t seq) const {
    check_seq(seq);
    if (!window_only()) return 0;
    const Group& g = groups_[1];
    const int64_t held = g.first_held[size_t(seq)];
    return held == 0 ? 0 : held + g.window;
}

void PagedKvCache::require_free(const Group& g, int64_t needed, int64_t seq, int64_t begin,
                                int64_t end) const {
    if (needed <= g.pool.free_blocks()) return;
    const int64_t tokens = g.pool.size() * bt_;
    throw Error("KV cache: the " + std::string(g.window > 0 ? "sliding-window layers' " : "") +
                "pool of " + std::to_string(tokens) + " tokens (" + mib((long double)bytes_) +
                " in all, " + std::to_string(g.pool.size()) + " blocks of " + std::to_string(bt_) +
                ") is full: sequence " + std::to_string(seq) + " needs " + std::to_string(needed) +
                " more blocks for slots [" + std::to_string(begin) + ", " + std::to_string(end) +
                ") and " + std::to_string(g.pool.free_blocks()) +
                " are free; use a KV policy (sliding window, StreamingLLM, ...) or a larger pool");
}

void PagedKvCache::move_slots(size_t il, size_t dst, size_t src, size_t rows) {
    // Token-major: one region of whole rows; head-major: one region per head.
    const size_t parts = shape_.head_major ? size_t(shape_.n_head_kv[il]) : 1;
    const size_t kb = k_slot_bytes_[il], vb = v_slot_bytes_[il];
    for (size_t h = 0; h < parts; ++h) {
        std::byte* k = k_base_[il] + h * k_head_stride_[il];
        std::byte* v = v_base_[il] + h * v_head_stride_[il];
        memory_->move(k + dst * kb, k + src * kb, rows * kb);
        if (!shape_.values_in_keys()) memory_->move(v + dst * vb, v + src * vb, rows * vb);
    }
}

void PagedKvCache::copy_block(const Group& g, int32_t from, int32_t to) {
    for (const int64_t layer : g.layers)
        move_slots(size_t(layer), size_t(to) * size_t(bt_), size_t(from) * size_t(bt_),
                   size_t(bt_));
}

void PagedKvCache::release_outside_window(Group& g, int64_t seq) {
    std::vector<int32_t>& table = g.tables[size_t(seq)];
    int64_t& held = g.first_held[size_t(seq)];
    const int64_t keep_from = length_[size_t(seq)] - g.window - shape_.window_slack;
    while (held + bt_ <= keep_from && size_t(held / bt_) < table.size()) {
        int32_t& entry = table[size_t(held / bt_)];
        g.pool.release(entry);
        entry = -1;
        held += bt_;
    }
}

void PagedKvCache::set_length(int64_t seq, int64_t n) {
    check_seq(seq);
    if (n < 0 || n > shape_.n_ctx)
        throw Error("KV cache: length " + std::to_string(n) + " of sequence " +
                    std::to_string(seq) + " is outside the context of " +
                    std::to_string(shape_.n_ctx) + " tokens");
    const int64_t floor = min_cut_length(seq);
    if (n > 0 && n < length_[size_t(seq)] && n < floor)
        throw Error("KV cache: sequence " + std::to_string(seq) + " cannot be cut back to " +
                    std::to_string(n) + " tokens: its sliding-window layers keep only the last " +
                    std::to_string(groups_[1].window) + " + " +
                    std::to_string(shape_.window_slack) + " and released the rows before slot " +
                    std::to_string(groups_[1].first_held[size_t(seq)]) +
                    " (cut back to 0 and recompute, or load with --swa-full)");
    const size_t needed = size_t(ceil_div(n, bt_));
    // Count first, then change: a full pool leaves the cache as it was.
    for (const Group& g : groups_) {
        const std::vector<int32_t>& table = g.tables[size_t(seq)];
        if (table.size() < needed)
            require_free(g, int64_t(needed - table.size()), seq, length_[size_t(seq)], n);
    }
    for (Group& g : groups_) {
        std::vector<int32_t>& table = g.tables[size_t(seq)];
        while (table.size() < needed) table.push_back(g.pool.acquire());
        while (table.size() > needed) {
            if (table.back() >= 0) g.pool.release(table.back());
            table.pop_back();
        }
        if (table.empty()) g.first_held[size_t(seq)] = 0;
    }
    length_[size_t(seq)] = n;
    if (window_only()) release_outside_window(groups_[1], seq);
}

void PagedKvCache::prepare(int64_t seq, int64_t begin, int64_t end) {
    check_seq(seq);
    if (begin < 0 || begin > end || end > shape_.n_ctx)
        throw Error("KV cache: slots [" + std::to_string(begin) + ", " + std::to_string(end) +
                    ") of sequence " + std::to_string(seq) + " are outside the context of " +
                    std::to_string(shape_.n_ctx) + " tokens");
    if (begin == end) return;
    if (window_only() && begin < groups_[1].first_held[size_t(seq)])
        throw Error("KV cache: slots [" + std::to_string(begin) + ", " + std::to_string(end) +
                    ") of sequence " + std::to_string(seq) +
                    " lie before the sliding-window layers' first stored slot " +
                    std::to_string(groups_[1].first_held[size_t(seq)]));
    const size_t first = size_t(begin / bt_), last = size_t(ceil_div(end, bt_));
    // Count first, then change: a full pool leaves the cache as it was.
    for (const Group& g : groups_) {
        const std::vector<int32_t>& table = g.tables[size_t(seq)];
        int64_t needed = int64_t(last > table.size() ? last - table.size() : 0);
        for (size_t i = first; i < std::min(last, table.size()); ++i)
            needed += g.pool.refs(table[i]) > 1;
        require_free(g, needed, seq, begin, end);
    }
    for (Group& g : groups_) {
        std::vector<int32_t>& table = g.tables[size_t(seq)];
        for (size_t i = first; i < std::min(last, table.size()); ++i) {
            if (g.pool.refs(table[i]) == 1) continue;
            const int32_t fresh = g.pool.acquire();  // copy-on-write of a shared block
            copy_block(g, table[i], fresh);
            g.pool.release(table[i]);
            table[i] = fresh;
        }
        while (table.size() < last) table.push_back(g.pool.acquire());
    }
}

KvCache::Slot PagedKvCache::slot(bool k, int64_t layer, int64_t seq, int64_t pos) const {
    if (layer < 0 || layer >= shape_.n_layer || seq < 0 || seq >= shape_.n_seq || pos < 0 ||
        pos >= shape_.n_ctx)
        throw Error("KV cache: row (layer " + std::to_string(layer) + ", sequence " +
                    std::to_string(seq) + ", position " + std::to_string(pos) +
                    ") is outside the cache (context " + std::to_string(shape_.n_ctx) + ")");
    const Group& g = group_of(layer);
    const std::vector<int32_t>& table = g.tables[size_t(seq)];
    const size_t i = size_t(pos / bt_);
    if (i >= table.size())
        throw Error("KV cache: row (layer " + std::to_string(layer) + ", sequence " +
                    std::to_string(seq) + ", position " + std::to_string(pos) +
                    ") has no block: the sequence holds " + std::to_string(table.size()) +
                    " blocks of " + std::to_string(bt_) + " tokens (prepare() the slot first)");
    if (table[i] < 0)
        throw Error("KV cache: row (layer " + std::to_string(layer) + ", sequence " +
                    std::to_string(seq) + ", position " + std::to_string(pos) +
                    ") was released: the layer keeps only its window of " +
                    std::to_string(g.window) + " tokens");
    const size_t at = size_t(table[i]) * size_t(bt_) + size_t(pos % bt_);
    const size_t l = size_t(layer);
    return k ? Slot{k_base_[l] + at * k_slot_bytes_[l], k_head_stride_[l]}
             : Slot{v_base_[l] + at * v_slot_bytes_[l], v_head_stride_[l]};
}

KvCache::Slot PagedKvCache::k_slot(int64_t layer, int64_t seq, int64_t pos) {
    return slot(true, layer, seq, pos);
}

KvCache::Slot PagedKvCache::v_slot(int64_t layer, int64_t seq, int64_t pos) {
    return slot(false, layer, seq, pos);
}

KvCache::Run PagedKvCache::run(bool k, int64_t layer, int64_t seq, int64_t pos, int64_t n) const {
    const Slot first = slot(k, layer, seq, pos);
    if (n <= 0) return {first.data, 0, 0, first.head_stride};
    if (n > 1) (void)slot(k, layer, seq, pos + n - 1);  // the whole range exists (Error otherwise)
    // Rows to the end of pos's block, then on through blocks that follow it in the pool too.
    const std::vector<int32_t>& table = group_of(layer).tables[size_t(seq)];
    size_t i = size_t(pos / bt_);
    int64_t rows = bt_ - pos % bt_;
    while (rows < n && table[i + 1] == table[i] + 1) {
        ++i;
        rows += bt_;
    }
    return {first.data, k ? k_slot_bytes_[size_t(layer)] : v_slot_bytes_[size_t(layer)],
            std::min(rows, n), first.head_stride};
}

KvCache::Run PagedKvCache::k_run(int64_t layer, int64_t seq, int64_t pos, int64_t n) const {
    return run(true, layer, seq, pos, n);
}

KvCache::Run PagedKvCache::v_run(int64_t layer, int64_t seq, int64_t pos, int64_t n) const {
    return run(false, layer, seq, pos, n);
}

void PagedKvCache::compact(int64_t seq, std::span<const int64_t> keep) {
    check_keep(seq, keep);
    if (window_only())
        throw Error(
            "KV cache: compaction (an evicting KV policy) needs every layer's rows, but "
            "this cache keeps only the window of the sliding-window layers (load with "
            "--swa-full)");
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
        const std::vector<int32_t>& table = groups_[0].tables[size_t(seq)];
        const auto pool_slot = [&](int64_t pos) {
            return size_t(table[size_t(pos / bt_)]) * size_t(bt_) + size_t(pos % bt_);
        };
        for (size_t il = 0; il < k_base_.size(); ++il)
            for (const Move& m : moves)
                move_slots(il, pool_slot(m.dst), pool_slot(m.src), size_t(m.rows));
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
    if (n_tokens > 0 && n_tokens < length_[size_t(src_seq)] && n_tokens < min_cut_length(src_seq))
        throw Error("KV cache: share_prefix of " + std::to_string(n_tokens) +
                    " tokens from sequence " + std::to_string(src_seq) +
                    ": its sliding-window layers released the rows that prefix would need");
    for (Group& g : groups_) {
        const std::vector<int32_t>& src = g.tables[size_t(src_seq)];
        std::vector<int32_t> shared(src.begin(), src.begin() + ceil_div(n_tokens, bt_));
        for (int32_t b : shared)  // before releasing: dst may hold the same blocks
            if (b >= 0) g.pool.retain(b);
        for (int32_t b : g.tables[size_t(dst_seq)])
            if (b >= 0) g.pool.release(b);
        g.tables[size_t(dst_seq)] = std::move(shared);
        g.first_held[size_t(dst_seq)] = n_tokens > 0 ? g.first_held[size_t(src_seq)] : 0;
    }
    length_[size_t(dst_seq)] = n_tokens;
}

size_t PagedKvCache::bytes_used(int64_t seq) const {
    check_seq(seq);
    const auto len = size_t(length_[size_t(seq)]);
    if (!window_only()) return len * shape_.bytes_per_token();
    const auto held = size_t(groups_[1].first_held[size_t(seq)]);
    return len * shape_.full_bytes_per_token() + (len - held) * shape_.window_bytes_per_slot();
}

KvOccupancy PagedKvCache::occupancy() const {
    KvOccupancy o;
    o.block_tokens = bt_;
    o.bytes_per_token = shape_.bytes_per_token();
    o.bytes_allocated = bytes_;
    const auto fill = [&](const Group& g, std::vector<KvOccupancy::Block>& blocks) {
        blocks.resize(size_t(g.pool.size()));
        for (int32_t b = 0; b < int32_t(g.pool.size()); ++b)
            blocks[size_t(b)].refs = g.pool.refs(b);
        for (size_t s = 0; s < g.tables.size(); ++s) {
            const std::vector<int32_t>& table = g.tables[s];
            for (size_t i = 0; i < table.size(); ++i) {
                if (table[i] < 0) continue;
                KvOccupancy::Block& blk = blocks[size_t(table[i])];
                if (blk.owner < 0) blk.owner = int32_t(s);
                const int64_t used = std::clamp<int64_t>(length_[s] - int64_t(i) * bt_, 0, bt_);
                blk.tokens = std::max(blk.tokens, int32_t(used));
            }
        }
    };
    fill(groups_[0], o.blocks);
    if (window_only()) {
        fill(groups_[1], o.window_blocks);
        o.bytes_per_token = shape_.full_bytes_per_token();
    }
    return o;
}

void PagedKvCache::check_invariants() const {
    for (const Group& g : groups_) {
        g.pool.check_invariants();
        std::vector<int64_t> listed(size_t(g.pool.size()), 0);
        std::vector<int64_t> last_table(size_t(g.pool.size()), -1);  // duplicates in one table
        for (size_t s = 0; s < g.tables.size(); ++s) {
            const std::vector<int32_t>& table = g.tables[s];
            const auto where = [&](size_t i) {
                return "KV cache: " + std::string(g.window > 0 ? "window group, " : "") +
                       "sequence " + std::to_string(s) + ", table entry " + std::to_string(i) +
                       " (block " + std::to_string(table[i]) + ")";
            };
            if (int64_t(table.size()) * bt_ < length_[s])
                throw Error("KV cache: sequence " + std::to_string(s) + " has length " +
                            std::to_string(length_[s]) + " but " + std::to_string(table.size()) +
                            " blocks of " + std::to_string(bt_));
            const int64_t held = g.first_held[s];
            if (held % bt_ != 0 || held < 0 || (g.window == 0 && held != 0))
                throw Error("KV cache: sequence " + std::to_string(s) + " first stored slot " +
                            std::to_string(held));
            for (size_t i = 0; i < table.size(); ++i) {
                const bool released = int64_t(i) * bt_ < held;
                if (released != (table[i] < 0))
                    throw Error(where(i) + (released ? ": should have been released"
                                                     : ": released but inside the window"));
                if (released) continue;
                if (table[i] >= g.pool.size())
                    throw Error(where(i) + ": outside the pool of " +
                                std::to_string(g.pool.size()));
                if (g.pool.refs(table[i]) < 1) throw Error(where(i) + ": the block is free");
                if (last_table[size_t(table[i])] == int64_t(s))
                    throw Error(where(i) + ": listed twice in the table");
                last_table[size_t(table[i])] = int64_t(s);
                ++listed[size_t(table[i])];
            }
            if (g.window > 0 && held > 0 && held > length_[s] - g.window)
                throw Error("KV cache: sequence " + std::to_string(s) + " released slot " +
                            std::to_string(held - 1) + ", inside its window");
        }
        for (int32_t b = 0; b < int32_t(g.pool.size()); ++b)
            if (listed[size_t(b)] > g.pool.refs(b))
                throw Error("KV cache: block " + std::to_string(b) + " is in " +
                            std::to_string(listed[size_t(b)]) + " tables but has " +
                            std::to_string(g.pool.refs(b)) + " references");
    }
}

}  // namespace fluoro
