#include "kv/block_pool.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <string>

#include "core/error.h"

// Every operation keeps the cheap O(1) invariants (counts never negative, free-list length equal
// to the blocks without references); debug builds also run the full O(n) check after each one.
#ifndef NDEBUG
#define FLUORO_POOL_SELF_CHECK() check_invariants()
#else
#define FLUORO_POOL_SELF_CHECK() (void)0
#endif

namespace fluoro {

BlockPool::BlockPool(int64_t n_blocks) {
    if (n_blocks < 1 || n_blocks > std::numeric_limits<int32_t>::max())
        throw Error("KV block pool: " + std::to_string(n_blocks) +
                    " blocks (must be between 1 and 2^31 - 1)");
    refs_.assign(size_t(n_blocks), 0);
    free_.resize(size_t(n_blocks));
    // Reverse order: the stack's back is block 0, so a fresh pool hands out 0, 1, 2, ...
    std::iota(free_.rbegin(), free_.rend(), 0);
}

void BlockPool::check_id(int32_t block, const char* op) const {
    if (block < 0 || block >= size())
        throw Error(std::string("KV block pool: ") + op + " of block " + std::to_string(block) +
                    " outside the pool of " + std::to_string(size()) + " blocks");
}

int32_t BlockPool::refs(int32_t block) const {
    check_id(block, "reference count");
    return refs_[size_t(block)];
}

int32_t BlockPool::acquire() {
    if (free_.empty())
        throw Error("KV block pool: all " + std::to_string(size()) + " blocks are in use");
    const int32_t b = free_.back();
    free_.pop_back();
    if (refs_[size_t(b)] != 0)
        throw Error("KV block pool: free block " + std::to_string(b) + " has " +
                    std::to_string(refs_[size_t(b)]) + " references");
    refs_[size_t(b)] = 1;
    ++total_refs_;
    FLUORO_POOL_SELF_CHECK();
    return b;
}

void BlockPool::retain(int32_t block) {
    check_id(block, "retain");
    int32_t& r = refs_[size_t(block)];
    if (r <= 0) throw Error("KV block pool: retain of free block " + std::to_string(block));
    if (r == std::numeric_limits<int32_t>::max())
        throw Error("KV block pool: block " + std::to_string(block) + " has too many references");
    ++r;
    ++total_refs_;
    FLUORO_POOL_SELF_CHECK();
}

void BlockPool::release(int32_t block) {
    check_id(block, "release");
    int32_t& r = refs_[size_t(block)];
    if (r <= 0) throw Error("KV block pool: release of free block " + std::to_string(block));
    --total_refs_;
    if (--r == 0) free_.push_back(block);
    FLUORO_POOL_SELF_CHECK();
}

void BlockPool::shuffle_free_blocks(uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::shuffle(free_.begin(), free_.end(), rng);
}

void BlockPool::check_invariants() const {
    const auto fail = [this](const std::string& what) {
        throw Error("KV block pool (" + std::to_string(size()) + " blocks, " +
                    std::to_string(free_blocks()) + " free): " + what);
    };
    int64_t sum = 0, unreferenced = 0;
    for (size_t b = 0; b < refs_.size(); ++b) {
        if (refs_[b] < 0)
            fail("block " + std::to_string(b) + " has " + std::to_string(refs_[b]) + " references");
        sum += refs_[b];
        unreferenced += refs_[b] == 0;
    }
    if (sum != total_refs_)
        fail("reference counts sum to " + std::to_string(sum) + " but " +
             std::to_string(total_refs_) + " references were handed out");
    std::vector<bool> listed(refs_.size(), false);
    for (size_t i = 0; i < free_.size(); ++i) {
        const int32_t b = free_[i];
        if (b < 0 || b >= size())
            fail("free-list entry " + std::to_string(i) + " is block " + std::to_string(b) +
                 ", outside the pool");
        if (listed[size_t(b)]) fail("block " + std::to_string(b) + " is on the free list twice");
        listed[size_t(b)] = true;
        if (refs_[size_t(b)] != 0)
            fail("block " + std::to_string(b) + " is on the free list with " +
                 std::to_string(refs_[size_t(b)]) + " references");
    }
    if (unreferenced != int64_t(free_.size()))
        for (size_t b = 0; b < refs_.size(); ++b)
            if (refs_[b] == 0 && !listed[b])
                fail("block " + std::to_string(b) +
                     " has no reference but is not on the free list");
}

}  // namespace fluoro
