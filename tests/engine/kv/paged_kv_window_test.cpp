// PagedKvCache with KvShape::window_only: the sliding-window layers keep only the slots their
// windows can still read (plus the slack), in a pool of their own. Checked against a cache that
// stores every token (ContiguousKvCache) under the same writes: every row a windowed layer may
// still read holds the same bytes, every global row too, released rows refuse access with an
// error, cuts behind the window are refused, and the invariants hold after every operation.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "core/error.h"
#include "engine/kv/kv_test_rows.h"
#include "kv/contiguous_kv.h"
#include "kv/paged_kv.h"

namespace fluoro {
namespace {

// 4 layers, windows of 8 keys on layers 1 and 3; blocks of 4; a slack of 4 slots and steps of
// at most 6 tokens: 8 + 4 + 6 = 18 slots -> ceil(18 / 4) + 2 = 7 blocks per sequence.
KvShape window_shape(int64_t n_seq = 2, int64_t n_ctx = 96) {
    KvShape s;
    s.n_layer = 4;
    s.n_head_kv = {2, 1, 2, 1};
    s.head_dim_k = s.head_dim_v = 32;
    s.n_seq = n_seq;
    s.n_ctx = n_ctx;
    s.block_tokens = 4;
    s.layer_window = {0, 8, 0, 8};
    s.window_only = true;
    s.window_slack = 4;
    s.step_tokens = 6;
    return s;
}

struct Twin {
    ContiguousKvCache full;
    PagedKvCache win;
    std::mt19937_64 rng{7};

    explicit Twin(KvShape s)
        : full([&] {
              KvShape c = s;
              c.paged = false;
              c.window_only = false;
              return c;
          }()),
          win(s) {
        win.shuffle_free_blocks(11);
    }

    // Random rows into slots [begin, end) of every layer, K and V; then length end.
    void step(int64_t seq, int64_t begin, int64_t end) {
        full.prepare(seq, begin, end);
        win.prepare(seq, begin, end);
        const KvShape& s = win.shape();
        for (int64_t il = 0; il < s.n_layer; ++il)
            for (int64_t p = begin; p < end; ++p)
                for (bool k : {true, false}) {
                    const size_t n = k ? s.k_row_bytes(il) : s.v_row_bytes(il);
                    std::vector<std::byte> b(n);
                    for (auto& x : b) x = std::byte(rng() & 0xff);
                    if (k) {
                        full.write_k(il, seq, p, b.data());
                        win.write_k(il, seq, p, b.data());
                    } else {
                        full.write_v(il, seq, p, b.data());
                        win.write_v(il, seq, p, b.data());
                    }
                }
        full.set_length(seq, end);
        win.set_length(seq, end);
        win.check_invariants();
    }

    // Every row the window cache must still hold equals the full cache's; rows a windowed layer
    // released throw.
    void check(int64_t seq) {
        const KvShape& s = win.shape();
        const int64_t len = win.length(seq);
        ASSERT_EQ(len, full.length(seq));
        for (int64_t il = 0; il < s.n_layer; ++il)
            for (int64_t p = 0; p < len; ++p) {
                const bool must_hold = !s.windowed(il) || p >= len - s.layer_window[size_t(il)];
                const bool released = s.windowed(il) && p < len - 8 - 4 - 4;  // a block behind
                if (must_hold) {
                    ASSERT_EQ(test::k_bytes(win, il, seq, p), test::k_bytes(full, il, seq, p))
                        << "layer " << il << " pos " << p;
                    ASSERT_EQ(test::v_bytes(win, il, seq, p), test::v_bytes(full, il, seq, p))
                        << "layer " << il << " pos " << p;
                } else if (released) {
                    EXPECT_THROW((void)win.k_slot(il, seq, p), Error)
                        << "layer " << il << " pos " << p;
                }
            }
    }
};

TEST(PagedKvWindow, TakesLessMemoryAndSaysHowMuch) {
    const KvShape s = window_shape();
    PagedKvCache win(s);
    KvShape f = s;
    f.window_only = false;
    PagedKvCache full(f);
    EXPECT_TRUE(win.window_only());
    EXPECT_FALSE(full.window_only());
    EXPECT_EQ(win.bytes_allocated(), paged_kv_bytes(s));
    EXPECT_EQ(full.bytes_allocated(), paged_kv_bytes(f));
    // Global layers: 2 sequences x 24 blocks x 4 slots of layers 0 and 2 (2 heads x 32 x 2 B x
    // K and V = 256 B each); windowed: 2 x 7 blocks x 4 slots of layers 1 and 3 (128 B each).
    EXPECT_EQ(win.bytes_allocated(), size_t(2 * 24 * 4 * 512 + 2 * 7 * 4 * 256));
    EXPECT_EQ(full.bytes_allocated(), size_t(2 * 24 * 4 * 768));
    const KvOccupancy o = win.occupancy();
    EXPECT_EQ(win.shape().max_window(), 8);
    EXPECT_EQ(o.window_blocks.size(), 14u);
    EXPECT_EQ(o.bytes_per_token, 512u);
    EXPECT_EQ(win.shape().window_bytes_per_slot(), 256u);
    EXPECT_EQ(win.bytes_if_full(), full.bytes_allocated());
}

TEST(PagedKvWindow, StepsKeepTheWindowRowsAndReleaseTheRest) {
    Twin t(window_shape());
    // Sequence 0 grows by steps of 1..6 tokens, sequence 1 beside it.
    int64_t len0 = 0, len1 = 0;
    std::mt19937 r(3);
    while (len0 < 90) {
        const int64_t n0 = std::min<int64_t>(1 + int64_t(r() % 6), 96 - len0);
        t.step(0, len0, len0 + n0);
        len0 += n0;
        if (len1 < 60) {
            t.step(1, len1, len1 + 5);
            len1 += 5;
        }
        t.check(0);
        t.check(1);
    }
    // The window pool never held more than its 7 blocks per sequence.
    EXPECT_LE(t.win.bytes_used(0), size_t(len0) * 512 + size_t(7 * 4) * 256);
    EXPECT_GT(t.win.min_cut_length(0), 0);
}

TEST(PagedKvWindow, CutsBackWithinTheSlackAndRefusesBehindIt) {
    Twin t(window_shape());
    for (int64_t p = 0; p < 60; p += 3) t.step(0, p, p + 3);
    const int64_t floor = t.win.min_cut_length(0);
    // Rows kept: from a block boundary at or before 60 - 8 - 4 = 48; the floor adds the window.
    EXPECT_EQ(floor, 48 + 8);
    try {
        t.win.set_length(0, floor - 1);
        FAIL() << "cut behind the window accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("sliding-window"), std::string::npos) << e.what();
    }
    EXPECT_EQ(t.win.length(0), 60);  // a refused cut changes nothing
    t.win.check_invariants();
    t.full.set_length(0, floor);
    t.win.set_length(0, floor);
    t.win.check_invariants();
    t.check(0);
    t.step(0, floor, floor + 6);  // and goes on from there
    t.check(0);
    // Back to nothing is always possible, and the sequence starts over.
    t.full.set_length(0, 0);
    t.win.set_length(0, 0);
    EXPECT_EQ(t.win.min_cut_length(0), 0);
    t.win.check_invariants();
    for (int64_t p = 0; p < 30; p += 6) t.step(0, p, p + 6);
    t.check(0);
}

TEST(PagedKvWindow, CompactionIsRefusedNamingTheReason) {
    Twin t(window_shape());
    t.step(0, 0, 6);
    const std::vector<int64_t> keep{0, 2, 4};
    try {
        t.win.compact(0, keep);
        FAIL() << "compaction accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--swa-full"), std::string::npos) << e.what();
    }
    EXPECT_EQ(t.win.length(0), 6);
}

TEST(PagedKvWindow, SharedPrefixKeepsTheWindowRows) {
    Twin t(window_shape());
    for (int64_t p = 0; p < 40; p += 4) t.step(0, p, p + 4);
    t.win.share_prefix(0, 1, 40);
    t.full.prepare(1, 0, 40);  // the contiguous cache shares nothing: a copy of the rows
    for (int64_t il = 0; il < 4; ++il)
        for (int64_t p = 0; p < 40; ++p) {
            t.full.write_k(il, 1, p, test::k_bytes(t.full, il, 0, p).data());
            t.full.write_v(il, 1, p, test::v_bytes(t.full, il, 0, p).data());
        }
    t.full.set_length(1, 40);
    t.win.check_invariants();
    t.check(1);
    t.step(1, 40, 44);  // copy-on-write of the shared last blocks
    t.check(0);
    t.check(1);
    EXPECT_THROW(t.win.share_prefix(0, 1, 20), Error);  // rows behind the window are gone
    t.win.check_invariants();
}

// A pool shared by the sequences (the prefix cache's: pool_tokens) holds as many windows as it
// holds contexts, and says how many blocks a sequence would lack to reach its most.
TEST(PagedKvWindow, ASharedPoolHoldsAsManyWindowsAsContexts) {
    KvShape s = window_shape(4, 96);
    s.pool_tokens = 2 * 96;
    PagedKvCache c(s);
    ASSERT_TRUE(c.window_only());
    EXPECT_EQ(c.occupancy().window_blocks.size(), 14u);  // 2 windows of 7 blocks, not 4
    EXPECT_EQ(c.window_shortfall(0), 0);                 // 14 free >= 7 + 1
    // Sequences 1..3 at 40 tokens each keep slots [28, 40): 3 blocks each, 5 left free.
    for (int64_t q = 1; q <= 3; ++q)
        for (int64_t p = 0; p < 40; p += 4) {
            c.prepare(q, p, p + 4);
            c.set_length(q, p + 4);
        }
    EXPECT_EQ(c.window_shortfall(0), 8 - 5);
    c.set_length(2, 0);
    EXPECT_EQ(c.window_shortfall(0), 0);
    c.check_invariants();
}

TEST(PagedKvWindow, AWindowAsLongAsTheContextStoresEverything) {
    KvShape s = window_shape(1, 24);  // 6 blocks of context < 7 blocks of window storage
    PagedKvCache c(s);
    EXPECT_FALSE(c.window_only());
    s.window_only = false;
    EXPECT_EQ(c.bytes_allocated(), paged_kv_bytes(s));
}

TEST(PagedKvWindow, ShapeValidationNamesTheField) {
    KvShape s = window_shape();
    s.layer_window = {0, 8};
    EXPECT_THROW(PagedKvCache{s}, Error);
    s = window_shape();
    s.layer_window[1] = -1;
    EXPECT_THROW(PagedKvCache{s}, Error);
}

}  // namespace
}  // namespace fluoro
