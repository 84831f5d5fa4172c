// BlockPool: reference counts, the free list and check_invariants() under hand-written and
// randomized acquire/retain/release sequences, checked against a shadow model after every step.
#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "core/error.h"

namespace fluoro {
namespace {

TEST(BlockPool, FreshPoolHandsOutBlocksInOrder) {
    BlockPool pool(4);
    EXPECT_EQ(pool.size(), 4);
    EXPECT_EQ(pool.free_blocks(), 4);
    for (int32_t b = 0; b < 4; ++b) EXPECT_EQ(pool.acquire(), b);
    EXPECT_EQ(pool.free_blocks(), 0);
    EXPECT_EQ(pool.used_blocks(), 4);
    pool.check_invariants();
}

TEST(BlockPool, CountsReferencesAndFreesAtZero) {
    BlockPool pool(3);
    const int32_t b = pool.acquire();
    EXPECT_EQ(pool.refs(b), 1);
    pool.retain(b);
    pool.retain(b);
    EXPECT_EQ(pool.refs(b), 3);
    pool.release(b);
    pool.release(b);
    EXPECT_EQ(pool.refs(b), 1);
    EXPECT_EQ(pool.free_blocks(), 2);
    pool.release(b);
    EXPECT_EQ(pool.refs(b), 0);
    EXPECT_EQ(pool.free_blocks(), 3);
    EXPECT_EQ(pool.acquire(), b);  // the last freed block comes back first
    pool.check_invariants();
}

TEST(BlockPool, MisuseThrowsAndLeavesThePoolIntact) {
    EXPECT_THROW(BlockPool(0), Error);
    BlockPool pool(2);
    EXPECT_THROW(pool.retain(0), Error);   // free
    EXPECT_THROW(pool.release(1), Error);  // free
    EXPECT_THROW(pool.retain(2), Error);   // outside
    EXPECT_THROW(pool.release(-1), Error);
    EXPECT_THROW((void)pool.refs(5), Error);
    pool.acquire();
    pool.acquire();
    try {
        pool.acquire();
        FAIL() << "acquire from an empty pool";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("all 2 blocks are in use"), std::string::npos)
            << e.what();
    }
    pool.check_invariants();
    EXPECT_EQ(pool.free_blocks(), 0);
}

TEST(BlockPool, ShuffledFreeListIsAPermutation) {
    BlockPool pool(64);
    pool.shuffle_free_blocks(7);
    std::vector<int32_t> got;
    for (int i = 0; i < 64; ++i) got.push_back(pool.acquire());
    std::vector<int32_t> sorted = got;
    std::sort(sorted.begin(), sorted.end());
    for (int32_t i = 0; i < 64; ++i) EXPECT_EQ(sorted[size_t(i)], i);
    EXPECT_FALSE(std::is_sorted(got.begin(), got.end()));
    pool.check_invariants();
}

// Random operations against a shadow map of reference counts; invariants checked after each.
TEST(BlockPool, RandomizedStressKeepsInvariants) {
    for (uint64_t seed = 1; seed <= 5; ++seed) {
        std::mt19937_64 rng(seed);
        const int64_t n = 1 + int64_t(rng() % 40);
        BlockPool pool(n);
        if (seed % 2) pool.shuffle_free_blocks(seed);
        std::map<int32_t, int32_t> shadow;  // held block -> refs
        for (int step = 0; step < 4000; ++step) {
            const int op = int(rng() % 3);
            if (op == 0) {
                if (int64_t(shadow.size()) == n) {
                    EXPECT_THROW(pool.acquire(), Error);
                } else {
                    const int32_t b = pool.acquire();
                    ASSERT_EQ(shadow.count(b), 0u) << "block " << b << " handed out twice";
                    shadow[b] = 1;
                }
            } else if (!shadow.empty()) {
                auto it = std::next(shadow.begin(), int64_t(rng() % shadow.size()));
                if (op == 1) {
                    pool.retain(it->first);
                    ++it->second;
                } else {
                    pool.release(it->first);
                    if (--it->second == 0) shadow.erase(it);
                }
            }
            ASSERT_NO_THROW(pool.check_invariants()) << "seed " << seed << " step " << step;
            ASSERT_EQ(pool.free_blocks(), n - int64_t(shadow.size()));
            for (const auto& [b, r] : shadow) ASSERT_EQ(pool.refs(b), r);
        }
        for (const auto& [b, r] : shadow)
            for (int32_t i = 0; i < r; ++i) pool.release(b);
        EXPECT_EQ(pool.free_blocks(), n);
        pool.check_invariants();
    }
}

}  // namespace
}  // namespace fluoro
