// PrefixCache: the radix tree against a brute-force longest-prefix search under random stores
// and evictions (splits, merges, invariants), the KV rows a restore brings back, LRU order,
// reference counts (evicting returns blocks to the pool).
#include "kv/prefix_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "kv/paged_kv.h"

namespace fluoro {
namespace {

KvShape shape(int64_t n_seq, int64_t n_ctx, int64_t pool_tokens = 0) {
    KvShape s;
    s.n_layer = 2;
    s.n_head_kv = {1, 2};
    s.head_dim_k = 32;
    s.head_dim_v = 32;
    s.type = KvType::F16;
    s.n_seq = n_seq;
    s.n_ctx = n_ctx;
    s.block_tokens = 4;
    s.pool_tokens = pool_tokens;
    return s;
}

// Makes seq hold `tokens`, each row filled with a byte derived from (token, position): what a
// forward pass over those tokens would have written.
void fill(PagedKvCache& kv, int64_t seq, const std::vector<int32_t>& tokens) {
    kv.set_length(seq, 0);
    const auto n = int64_t(tokens.size());
    kv.prepare(seq, 0, n);
    kv.set_length(seq, n);
    for (int64_t p = 0; p < n; ++p)
        for (int64_t l = 0; l < kv.shape().n_layer; ++l) {
            const auto b = std::byte(uint8_t(tokens[size_t(p)] * 7 + p));
            std::memset(kv.k_slot(l, seq, p).data, int(b), kv.shape().k_head_bytes());
            std::memset(kv.v_slot(l, seq, p).data, int(~uint8_t(b)), kv.shape().v_head_bytes());
        }
}

// Whether seq's first n rows are those fill() writes for tokens.
bool holds(PagedKvCache& kv, int64_t seq, const std::vector<int32_t>& tokens, int64_t n) {
    for (int64_t p = 0; p < n; ++p)
        for (int64_t l = 0; l < kv.shape().n_layer; ++l) {
            const auto want = uint8_t(tokens[size_t(p)] * 7 + p);
            const auto k = uint8_t(kv.k_slot(l, seq, p).data[0]);
            const auto v = uint8_t(kv.v_slot(l, seq, p).data[0]);
            if (k != want || v != uint8_t(~want)) return false;
        }
    return true;
}

int64_t common(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    return int64_t(i);
}

TEST(PrefixCache, LongestPrefixMatchesBruteForceUnderRandomStoresAndEvictions) {
    std::mt19937 rng(7);
    PagedKvCache kv(shape(6, 40));
    PrefixCache cache(kv, 1, 5);
    // Prompts that share prefixes: a few stems, then random tails over a 3-token alphabet.
    const std::vector<std::vector<int32_t>> stems = {{1, 2, 3, 4, 5, 6}, {1, 2, 3, 9}, {8}, {}};
    auto random_prompt = [&] {
        std::vector<int32_t> t = stems[rng() % stems.size()];
        const size_t tail = rng() % 12;
        for (size_t i = 0; i < tail; ++i) t.push_back(int32_t(rng() % 3));
        if (t.empty()) t.push_back(0);
        return t;
    };
    for (int round = 0; round < 400; ++round) {
        const std::vector<int32_t> t = random_prompt();
        if (rng() % 3 != 0) {
            fill(kv, 0, t);
            cache.store(t, 0);
        } else {
            const std::vector<int32_t> q = random_prompt();
            int64_t best = 0;
            const auto entries = cache.entries();
            for (const auto& e : entries) best = std::max(best, common(e, q));
            const PrefixCache::Match m = cache.lookup(q);
            ASSERT_EQ(m.tokens, best) << "round " << round;
            // next_cached: a token some entry holds right after the match, -1 when none does.
            bool continues = false, names_one = false;
            for (const auto& e : entries)
                if (common(e, q) == best && int64_t(e.size()) > best) {
                    continues = true;
                    names_one = names_one || e[size_t(best)] == m.next_cached;
                }
            ASSERT_EQ(m.next_cached >= 0, continues) << "round " << round;
            if (continues) {
                ASSERT_TRUE(names_one) << "round " << round;
            }
            if (best > 0) {
                ASSERT_GE(m.slot, 1);
                const auto& e = entries[size_t(m.slot - 1)];
                ASSERT_GE(common(e, q), best);
                cache.restore(m, 0);
                ASSERT_EQ(kv.length(0), best);
                ASSERT_TRUE(holds(kv, 0, q, best)) << "round " << round;
            }
        }
        ASSERT_NO_THROW(cache.check_invariants()) << "round " << round;
        ASSERT_NO_THROW(kv.check_invariants()) << "round " << round;
    }
    const PrefixCache::Stats s = cache.stats();
    EXPECT_GT(s.evictions, 0);
    EXPECT_GE(s.evicted_tokens, s.evictions);
    EXPECT_GT(s.hits, 0);
    EXPECT_LE(s.entries, 5);
}

TEST(PrefixCache, RestoreBringsBackTheRowsAfterTheLiveSequenceMovedOn) {
    PagedKvCache kv(shape(3, 64));
    PrefixCache cache(kv, 1, 2);
    const std::vector<int32_t> a = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14};  // 2.5 blocks
    fill(kv, 0, a);
    ASSERT_TRUE(cache.store(a, 0));
    fill(kv, 0, {40, 41, 42});  // another conversation overwrites seq 0 (copy-on-write)
    EXPECT_TRUE(holds(kv, 0, {40, 41, 42}, 3));
    std::vector<int32_t> q = a;
    q.resize(7);
    q.push_back(99);
    const PrefixCache::Match m = cache.lookup(q);
    EXPECT_EQ(m.tokens, 7);
    cache.restore(m, 0);
    EXPECT_EQ(kv.length(0), 7);
    EXPECT_TRUE(holds(kv, 0, a, 7));
    // Writing on past the restored prefix leaves the cached entry intact.
    kv.prepare(0, 7, 8);
    kv.set_length(0, 8);
    std::memset(kv.k_slot(0, 0, 7).data, 0, kv.shape().k_head_bytes());
    const PrefixCache::Match again = cache.lookup(a);
    EXPECT_EQ(again.tokens, int64_t(a.size()));
    cache.restore(again, 0);
    EXPECT_TRUE(holds(kv, 0, a, int64_t(a.size())));
    kv.check_invariants();
    cache.check_invariants();
}

TEST(PrefixCache, EvictsTheLeastRecentlyUsedAndReturnsItsBlocks) {
    PagedKvCache kv(shape(3, 32));
    PrefixCache cache(kv, 1, 2);
    const std::vector<int32_t> a = {1, 1, 1, 1, 1}, b = {2, 2, 2, 2, 2}, c = {3, 3, 3, 3, 3};
    fill(kv, 0, a);
    cache.store(a, 0);
    fill(kv, 0, b);
    cache.store(b, 0);
    cache.restore(cache.lookup(a), 0);  // a is now the more recently used
    fill(kv, 0, c);
    cache.store(c, 0);  // no free slot: b goes
    EXPECT_EQ(cache.lookup(b).tokens, 0);
    EXPECT_EQ(cache.lookup(a).tokens, 5);
    EXPECT_EQ(cache.lookup(c).tokens, 5);
    EXPECT_EQ(cache.stats().evictions, 1);

    // Entries hold blocks nothing else holds once seq 0 is gone; ensure_free_blocks evicts them.
    kv.set_length(0, 0);
    const int64_t free_before = kv.pool().free_blocks();
    cache.ensure_free_blocks(kv.pool().size());
    EXPECT_EQ(cache.stats().entries, 0);
    EXPECT_EQ(kv.pool().free_blocks(), kv.pool().size());
    EXPECT_GT(kv.pool().free_blocks(), free_before);
    cache.check_invariants();
    kv.check_invariants();
}

TEST(PrefixCache, StoringALongerPrefixReplacesTheShorterAndARepeatAddsNothing) {
    PagedKvCache kv(shape(4, 32));
    PrefixCache cache(kv, 1, 3);
    const std::vector<int32_t> sys = {1, 2, 3, 4, 5}, turn = {1, 2, 3, 4, 5, 6, 7};
    fill(kv, 0, sys);
    EXPECT_TRUE(cache.store(sys, 0));
    EXPECT_FALSE(cache.store(sys, 0));
    fill(kv, 0, turn);
    EXPECT_TRUE(cache.store(turn, 0));
    EXPECT_EQ(cache.stats().entries, 1);  // sys is a prefix of turn: covered
    const std::vector<int32_t> shorter = {1, 2, 3};
    EXPECT_FALSE(cache.store(shorter, 0));
    EXPECT_EQ(cache.lookup(sys).tokens, 5);
    cache.check_invariants();
}

// The tree the UI draws: pre-order, split where entries diverge, entries counted per subtree,
// recency ranked, and the path a query follows marked token by token.
TEST(PrefixCache, TreeSnapshotShowsSplitsEntriesRecencyAndTheMatchedPath) {
    PagedKvCache kv(shape(5, 32));
    PrefixCache cache(kv, 1, 4);
    const std::vector<std::vector<int32_t>> prompts{{1, 2, 3, 4}, {1, 2, 5, 6}, {7, 8}};
    for (const auto& p : prompts) {
        fill(kv, 0, p);
        ASSERT_TRUE(cache.store(p, 0));
    }
    const std::vector<int32_t> query{1, 2, 5, 9};
    const auto t = cache.tree(query);
    ASSERT_EQ(t.size(), 5u);  // root, "1 2", "3 4", "5 6", "7 8"
    EXPECT_EQ(t[0].parent, -1);
    EXPECT_TRUE(t[0].edge.empty());
    EXPECT_EQ(t[0].entries, 3);
    EXPECT_EQ(t[1].edge, (std::vector<int32_t>{1, 2}));
    EXPECT_EQ(t[1].parent, 0);
    EXPECT_EQ(t[1].entries, 2);
    EXPECT_EQ(t[1].slot, -1);
    EXPECT_EQ(t[1].matched, 2);
    EXPECT_EQ(t[2].edge, (std::vector<int32_t>{3, 4}));
    EXPECT_EQ(t[2].parent, 1);
    EXPECT_EQ(t[2].depth, 4);
    EXPECT_EQ(t[2].matched, 0);
    EXPECT_EQ(t[2].recency, 2);  // stored first: the least recent of three
    EXPECT_EQ(t[3].edge, (std::vector<int32_t>{5, 6}));
    EXPECT_EQ(t[3].matched, 1);  // 5 follows, 9 is not 6
    EXPECT_EQ(t[3].recency, 1);
    EXPECT_GE(t[3].slot, 1);
    EXPECT_EQ(t[4].edge, (std::vector<int32_t>{7, 8}));
    EXPECT_EQ(t[4].matched, 0);
    EXPECT_EQ(t[4].recency, 0);
    for (const auto& n : cache.tree()) EXPECT_EQ(n.matched, 0);  // no query: no path
}

TEST(PrefixCache, RejectsSlotsOutsideTheCache) {
    PagedKvCache kv(shape(2, 16));
    EXPECT_THROW(PrefixCache(kv, 1, 2), Error);
    PrefixCache cache(kv, 1, 1);
    EXPECT_THROW(cache.restore({1, 3}, 0), Error);  // slot 1 holds nothing
}

}  // namespace
}  // namespace fluoro
