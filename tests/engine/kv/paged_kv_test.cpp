// PagedKvCache against ContiguousKvCache on small shapes: the same writes, prefix shares,
// compactions and truncations leave the same bytes in every row; copy-on-write never touches
// the source; reference counts stay balanced and no block outlives its sequences.
#include "kv/paged_kv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "core/error.h"
#include "engine/kv/kv_test_rows.h"
#include "kv/contiguous_kv.h"

namespace fluoro {
namespace {

// values_in_keys: MLA's absorbed cache, whose values are dims [32, 96) of 96-dim key rows.
KvShape small_shape(int64_t block_tokens, KvType type = KvType::F16, int64_t n_seq = 3,
                    int64_t n_ctx = 50, bool head_major = true, bool values_in_keys = false) {
    KvShape s;
    s.n_layer = 3;
    s.n_head_kv = {2, 1, 3};
    s.head_dim_k = values_in_keys ? 96 : 32;
    s.head_dim_v = 64;
    s.v_in_k = values_in_keys ? 32 : -1;
    s.type = type;
    s.n_seq = n_seq;
    s.n_ctx = n_ctx;
    s.block_tokens = block_tokens;
    s.head_major = head_major;
    return s;
}

std::vector<std::byte> random_bytes(size_t n, std::mt19937_64& rng) {
    std::vector<std::byte> b(n);
    for (auto& x : b) x = std::byte(rng() & 0xff);
    return b;
}

// A paged and a contiguous cache of one shape driven by the same operations, the contiguous one
// in the other layout (token-major against head-major): rows compare through read_k/read_v.
struct Twin {
    ContiguousKvCache flat;
    PagedKvCache paged;
    std::mt19937_64 rng;

    Twin(KvShape s, uint64_t seed)
        : flat([&] {
              KvShape c = s;
              c.paged = false;
              c.head_major = !s.head_major;
              return c;
          }()),
          paged(s),
          rng(seed) {
        paged.shuffle_free_blocks(seed);
    }

    const KvShape& shape() const { return paged.shape(); }

    // Random K and V bytes into slots [begin, end) of every layer, then length max(len, end).
    void write(int64_t seq, int64_t begin, int64_t end) {
        flat.prepare(seq, begin, end);
        paged.prepare(seq, begin, end);
        for (int64_t il = 0; il < shape().n_layer; ++il)
            for (int64_t pos = begin; pos < end; ++pos) {
                const auto k = random_bytes(shape().k_row_bytes(il), rng);
                const auto v = random_bytes(shape().v_row_bytes(il), rng);
                flat.write_k(il, seq, pos, k.data());
                paged.write_k(il, seq, pos, k.data());
                flat.write_v(il, seq, pos, v.data());
                paged.write_v(il, seq, pos, v.data());
            }
        const int64_t n = std::max(flat.length(seq), end);
        flat.set_length(seq, n);
        paged.set_length(seq, n);
    }

    // The contiguous cache has no sharing: a prefix share is a copy there.
    void share(int64_t src, int64_t dst, int64_t n) {
        for (int64_t il = 0; il < shape().n_layer; ++il)
            for (int64_t pos = 0; pos < n; ++pos) {
                flat.write_k(il, dst, pos, test::k_bytes(flat, il, src, pos).data());
                flat.write_v(il, dst, pos, test::v_bytes(flat, il, src, pos).data());
            }
        flat.set_length(dst, n);
        paged.share_prefix(src, dst, n);
    }

    void compact(int64_t seq, const std::vector<int64_t>& keep) {
        flat.compact(seq, keep);  // KvCache's default, row by row
        paged.compact(seq, keep);
    }

    void set_length(int64_t seq, int64_t n) {
        flat.set_length(seq, n);
        paged.set_length(seq, n);
    }

    // Every valid row equal, read row by row and run by run.
    void expect_equal(const std::string& where) {
        for (int64_t s = 0; s < shape().n_seq; ++s) {
            const int64_t len = flat.length(s);
            ASSERT_EQ(paged.length(s), len) << where << " seq " << s;
            for (int64_t il = 0; il < shape().n_layer; ++il) {
                const size_t kh = shape().k_head_bytes(), vh = shape().v_head_bytes();
                const int64_t n_head = shape().n_head_kv[size_t(il)];
                for (int64_t pos = 0; pos < len; ++pos) {
                    ASSERT_EQ(test::k_bytes(flat, il, s, pos), test::k_bytes(paged, il, s, pos))
                        << where << ": K of seq " << s << " layer " << il << " pos " << pos;
                    ASSERT_EQ(test::v_bytes(flat, il, s, pos), test::v_bytes(paged, il, s, pos))
                        << where << ": V of seq " << s << " layer " << il << " pos " << pos;
                    if (!shape().values_in_keys()) continue;
                    // Each head's values are its key row's bytes from v_in_k on.
                    const auto k = test::k_bytes(paged, il, s, pos);
                    const auto v = test::v_bytes(paged, il, s, pos);
                    for (int64_t h = 0; h < n_head; ++h)
                        ASSERT_EQ(
                            0, std::memcmp(v.data() + size_t(h) * vh,
                                           k.data() + size_t(h) * kh + shape().v_in_k_bytes(), vh))
                            << where << ": V is not K's latent, layer " << il << " pos " << pos;
                }
                for (int64_t pos = 0; pos < len;) {
                    const KvCache::Run k = paged.k_run(il, s, pos, len - pos);
                    const KvCache::Run v = paged.v_run(il, s, pos, len - pos);
                    ASSERT_GE(k.rows, 1);
                    ASSERT_LE(k.rows, len - pos);
                    ASSERT_EQ(k.rows, v.rows);
                    for (int64_t r = 0; r < k.rows; ++r) {
                        const auto fk = test::k_bytes(flat, il, s, pos + r);
                        const auto fv = test::v_bytes(flat, il, s, pos + r);
                        for (int64_t h = 0; h < n_head; ++h) {
                            ASSERT_EQ(0, std::memcmp(k.data + size_t(r) * k.stride +
                                                         size_t(h) * k.head_stride,
                                                     fk.data() + size_t(h) * kh, kh))
                                << where << ": K run at " << pos << " row " << r << " head " << h;
                            ASSERT_EQ(0, std::memcmp(v.data + size_t(r) * v.stride +
                                                         size_t(h) * v.head_stride,
                                                     fv.data() + size_t(h) * vh, vh))
                                << where << ": V run at " << pos << " row " << r << " head " << h;
                        }
                    }
                    pos += k.rows;
                }
            }
        }
    }

    std::vector<int64_t> random_keep(int64_t len) {
        std::vector<int64_t> keep;
        const int mode = int(rng() % 3);
        const int64_t sinks = int64_t(rng() % 5), window = int64_t(rng() % (len + 1));
        for (int64_t i = 0; i < len; ++i) {
            const bool kept = mode == 0   ? rng() % 3 != 0                  // scattered
                              : mode == 1 ? i < sinks || i >= len - window  // sinks + window
                                          : i % 7 != 3;                     // periodic
            if (kept) keep.push_back(i);
        }
        return keep;
    }
};

class PagedVsContiguous
    : public testing::TestWithParam<
          std::tuple<int64_t, KvType, bool /*head_major*/, bool /*values_in_keys*/>> {};

TEST_P(PagedVsContiguous, RandomOperationsLeaveEqualRows) {
    const auto [bt, type, head_major, in_keys] = GetParam();
    for (uint64_t seed = 1; seed <= 4; ++seed) {
        Twin t(small_shape(bt, type, 3, 50, head_major, in_keys), seed);
        ASSERT_EQ(t.shape().values_in_keys(), in_keys);
        const int64_t n_ctx = t.shape().n_ctx, n_seq = t.shape().n_seq;
        for (int step = 0; step < 150; ++step) {
            const int64_t s = int64_t(t.rng() % uint64_t(n_seq));
            const int64_t len = t.flat.length(s);
            const int op = int(t.rng() % 10);
            std::string what;
            if (op < 5) {  // append (or overwrite a tail, as a rollback and re-decode does)
                const int64_t begin =
                    len - int64_t(t.rng() % uint64_t(std::min<int64_t>(len, 5) + 1));
                const int64_t end = std::min(n_ctx, begin + 1 + int64_t(t.rng() % 20));
                if (begin < end) t.write(s, begin, end);
                what = "write";
            } else if (op == 5) {
                t.set_length(s, int64_t(t.rng() % uint64_t(len + 1)));
                what = "shrink";
            } else if (op < 8) {
                const int64_t dst = (s + 1 + int64_t(t.rng() % uint64_t(n_seq - 1))) % n_seq;
                t.share(s, dst, int64_t(t.rng() % uint64_t(len + 1)));
                what = "share";
            } else if (len > 0) {
                t.compact(s, t.random_keep(len));
                what = "compact";
            }
            ASSERT_NO_THROW(t.paged.check_invariants()) << what << " at step " << step;
            t.expect_equal("seed " + std::to_string(seed) + " step " + std::to_string(step) + " (" +
                           what + ")");
            if (testing::Test::HasFatalFailure()) return;
        }
        for (int64_t s = 0; s < n_seq; ++s) t.paged.set_length(s, 0);
        t.paged.check_invariants();
        EXPECT_EQ(t.paged.pool().free_blocks(), t.paged.pool().size()) << "blocks leaked";
    }
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, PagedVsContiguous,
                         testing::Values(std::make_tuple(int64_t(16), KvType::F16, true, false),
                                         std::make_tuple(int64_t(7), KvType::F16, true, false),
                                         std::make_tuple(int64_t(1), KvType::Q8_0, true, false),
                                         std::make_tuple(int64_t(5), KvType::Q4_0, true, false),
                                         std::make_tuple(int64_t(16), KvType::F16, false, false),
                                         std::make_tuple(int64_t(5), KvType::Q4_0, false, false),
                                         std::make_tuple(int64_t(7), KvType::F16, true, true),
                                         std::make_tuple(int64_t(5), KvType::Q8_0, true, true),
                                         std::make_tuple(int64_t(4), KvType::F16, false, true),
                                         std::make_tuple(int64_t(3), KvType::Q4_0, false, true)));

// MLA's absorbed cache reads its values out of the key rows: it stores the keys alone (the
// paper's rope + latent per token), a copy-on-write or compaction moves no value bytes of its
// own, and it applies only where the keys' storage can serve as the values' — the same type, the
// offset on a quantization block — else the values are stored apart as for any model.
TEST(PagedKv, ValuesReadFromTheKeysTakeNoStorage) {
    const KvShape apart = small_shape(8, KvType::F16);
    const KvShape in_keys = small_shape(8, KvType::F16, 3, 50, true, true);
    EXPECT_FALSE(apart.values_in_keys());
    ASSERT_TRUE(in_keys.values_in_keys());
    // 6 KV heads over the 3 layers, 96 f16 key values each: no value bytes.
    EXPECT_EQ(in_keys.bytes_per_token(), size_t(6 * 96 * 2));
    KvShape q8 = in_keys;
    q8.type = KvType::Q8_0;
    EXPECT_TRUE(q8.values_in_keys());
    EXPECT_EQ(q8.bytes_per_token(), size_t(6 * 3 * 34));  // 3 q8_0 blocks of 34 bytes per head
    EXPECT_EQ(q8.v_in_k_bytes(), size_t(34));
    KvShape mixed = in_keys;
    mixed.type = KvTypes(KvType::F16, KvType::Q8_0);
    EXPECT_FALSE(mixed.values_in_keys());  // stored apart, at the values' own type
    EXPECT_EQ(mixed.bytes_per_token(), size_t(6 * (96 * 2 + 2 * 34)));
    KvShape off_block = q8;
    off_block.v_in_k = 16;
    off_block.head_dim_v = 64;
    EXPECT_FALSE(off_block.values_in_keys());  // dim 16 is inside a q8_0 block
    KvShape too_wide = in_keys;
    too_wide.n_ctx = 50, too_wide.v_in_k = 64;  // [64, 128) of 96 dims
    EXPECT_THROW(too_wide.validate(), Error);
    KvShape copied = in_keys;  // the same rows with the values stored apart
    copied.v_in_k = -1;
    const PagedKvCache a(copied), b(in_keys);
    const size_t rows = 3 * 7 * 8;  // 3 sequences x 7 blocks of 8 slots (50 tokens each)
    EXPECT_EQ(a.bytes_allocated(), rows * 6 * (96 + 64) * 2);
    EXPECT_EQ(b.bytes_allocated(), rows * 6 * 96 * 2);
    EXPECT_EQ(b.occupancy().bytes_per_token, in_keys.bytes_per_token());
    ContiguousKvCache c(in_keys);
    c.set_length(0, 1);
    std::vector<std::byte> k(in_keys.k_row_bytes(1)), v(in_keys.v_row_bytes(1), std::byte{7});
    for (size_t i = 0; i < k.size(); ++i) k[i] = std::byte(i);
    c.write_k(1, 0, 0, k.data());
    c.write_v(1, 0, 0, v.data());  // writes nothing: the key row holds the values
    EXPECT_EQ(test::k_bytes(c, 1, 0, 0), k);
    const auto got = test::v_bytes(c, 1, 0, 0);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), k.begin() + 64));  // dims 32.. of 96 f16
}

TEST(PagedKv, CompactionOfASharedSequenceMatchesDefaultCompaction) {
    Twin t(small_shape(4), 11);
    t.write(0, 0, 45);
    t.share(0, 1, 45);
    // Sinks 0..2 stay put, then a window: the first moved slot is inside shared block 0.
    std::vector<int64_t> keep{0, 1, 2};
    for (int64_t i = 30; i < 45; ++i) keep.push_back(i);
    const auto before = t.paged.pool().free_blocks();
    t.compact(1, keep);
    t.expect_equal("after compaction");
    t.paged.check_invariants();
    // Sequence 1 now owns its 5 blocks (copied out of the shared ones; the rest trimmed).
    for (int32_t b : t.paged.blocks_of(1)) EXPECT_EQ(t.paged.pool().refs(b), 1);
    for (int32_t b : t.paged.blocks_of(0)) EXPECT_EQ(t.paged.pool().refs(b), 1);
    EXPECT_EQ(t.paged.pool().free_blocks(), before - 5);
}

TEST(PagedKv, SharePrefixThenCopyOnWriteLeavesTheSourceUntouched) {
    Twin t(small_shape(16, KvType::F16, 2, 64), 3);
    t.write(0, 0, 40);
    const auto src_blocks =
        std::vector<int32_t>(t.paged.blocks_of(0).begin(), t.paged.blocks_of(0).end());
    const int64_t free_before = t.paged.pool().free_blocks();

    t.share(0, 1, 37);  // 2 full blocks and 5 of the third's 8 rows
    ASSERT_EQ(t.paged.length(1), 37);
    const auto dst = t.paged.blocks_of(1);
    ASSERT_EQ(dst.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(dst[i], src_blocks[i]);
        EXPECT_EQ(t.paged.pool().refs(dst[i]), 2);
    }
    EXPECT_EQ(t.paged.pool().free_blocks(), free_before);  // sharing allocates nothing
    KvOccupancy occ = t.paged.occupancy();
    EXPECT_EQ(occ.blocks[size_t(src_blocks[2])].refs, 2);
    EXPECT_EQ(occ.blocks[size_t(src_blocks[2])].owner, 0);
    EXPECT_EQ(occ.blocks[size_t(src_blocks[2])].tokens, 8);

    // Writing slot 37 of sequence 1 copies the shared partial block; sequence 0 keeps its rows.
    t.write(1, 37, 42);
    t.expect_equal("after copy-on-write");
    EXPECT_NE(t.paged.blocks_of(1)[2], src_blocks[2]);
    EXPECT_EQ(t.paged.blocks_of(1)[0], src_blocks[0]);
    EXPECT_EQ(t.paged.pool().refs(src_blocks[2]), 1);
    EXPECT_EQ(t.paged.pool().refs(src_blocks[0]), 2);
    EXPECT_EQ(t.paged.pool().free_blocks(), free_before - 1);
    t.paged.check_invariants();

    // Overwriting a shared full block too (a regenerate from slot 3).
    t.write(1, 3, 5);
    t.expect_equal("after overwrite of block 0");
    EXPECT_EQ(t.paged.pool().refs(src_blocks[0]), 1);

    t.paged.set_length(0, 0);
    t.paged.set_length(1, 0);
    t.paged.check_invariants();
    EXPECT_EQ(t.paged.pool().free_blocks(), t.paged.pool().size());
}

TEST(PagedKv, SharePrefixReplacesTheDestinationsBlocks) {
    PagedKvCache kv(small_shape(8, KvType::F16, 2, 64));
    kv.set_length(0, 30);
    kv.set_length(1, 50);
    kv.share_prefix(0, 1, 20);
    EXPECT_EQ(kv.length(1), 20);
    EXPECT_EQ(kv.pool().used_blocks(), 4);  // dst's 7 blocks released, 3 of src's shared
    kv.share_prefix(1, 0, 20);              // back onto blocks the destination already holds
    kv.check_invariants();
    EXPECT_EQ(kv.length(0), 20);
    EXPECT_EQ(kv.pool().used_blocks(), 3);
    EXPECT_THROW(kv.share_prefix(0, 0, 5), Error);
    EXPECT_THROW(kv.share_prefix(0, 1, 21), Error);
    EXPECT_THROW(kv.share_prefix(0, 2, 1), Error);
    kv.check_invariants();
}

TEST(PagedKv, UnpreparedAndOutOfRangeRowsThrow) {
    PagedKvCache kv(small_shape(16, KvType::F16, 2, 50));
    EXPECT_THROW(kv.k_slot(0, 0, 0), Error);  // no block yet
    kv.prepare(0, 0, 10);
    EXPECT_NO_THROW(kv.k_slot(2, 0, 15));  // the block is there, past the length
    EXPECT_THROW(kv.v_slot(0, 0, 16), Error);
    EXPECT_THROW(kv.k_slot(3, 0, 0), Error);     // layer
    EXPECT_THROW(kv.k_slot(0, 2, 0), Error);     // sequence
    EXPECT_THROW(kv.k_slot(0, 0, 50), Error);    // context
    EXPECT_THROW(kv.k_run(0, 0, 5, 20), Error);  // runs past the table
    EXPECT_THROW(kv.prepare(0, 40, 51), Error);
    EXPECT_THROW(kv.set_length(0, 51), Error);
    EXPECT_THROW(kv.set_length(0, -1), Error);
}

TEST(PagedKv, RunsEndAtBlockBoundariesUnlessTheNextBlockFollowsInThePool) {
    PagedKvCache kv(small_shape(4, KvType::F16, 1, 32));
    kv.set_length(0, 32);  // fresh pool: blocks 0..7 in order, one contiguous region
    EXPECT_EQ(kv.k_run(1, 0, 2, 30).rows, 30);
    // Head-major: consecutive slots one head row apart, heads a whole region (32 slots) apart.
    EXPECT_EQ(kv.k_run(2, 0, 2, 30).stride, kv.shape().k_head_bytes());
    EXPECT_EQ(kv.k_run(2, 0, 2, 30).head_stride, 32 * kv.shape().k_head_bytes());
    PagedKvCache token_major(small_shape(4, KvType::F16, 1, 32, false));
    token_major.set_length(0, 32);
    EXPECT_EQ(token_major.k_run(2, 0, 2, 30).rows, 30);
    EXPECT_EQ(token_major.k_run(2, 0, 2, 30).stride, kv.shape().k_row_bytes(2));
    EXPECT_EQ(token_major.k_run(2, 0, 2, 30).head_stride, kv.shape().k_head_bytes());

    PagedKvCache shuffled(small_shape(4, KvType::F16, 1, 32));
    shuffled.shuffle_free_blocks(5);
    shuffled.set_length(0, 32);
    const auto table = shuffled.blocks_of(0);
    for (int64_t pos = 0; pos < 32; ++pos) {
        const KvCache::Run r = shuffled.v_run(0, 0, pos, 32 - pos);
        int64_t expect = 4 - pos % 4;
        for (size_t i = size_t(pos / 4); i + 1 < table.size() && table[i + 1] == table[i] + 1; ++i)
            expect += 4;
        EXPECT_EQ(r.rows, std::min<int64_t>(expect, 32 - pos)) << pos;
        EXPECT_EQ(r.data, shuffled.v_slot(0, 0, pos).data);
    }
}

TEST(PagedKv, FullPoolNamesTheBudgetAndChangesNothing) {
    KvShape s = small_shape(16, KvType::F16, 2, 64);
    s.pool_tokens = 40;  // 3 blocks
    PagedKvCache kv(s);
    EXPECT_EQ(kv.pool().size(), 3);
    kv.prepare(0, 0, 32);
    kv.set_length(0, 32);
    kv.share_prefix(0, 1, 20);
    try {
        kv.prepare(1, 20, 40);  // copy of block 1 + a new block: 2 needed, 1 free
        FAIL() << "prepare past the budget";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("pool of 48 tokens"), std::string::npos) << m;
        EXPECT_NE(m.find("MiB"), std::string::npos) << m;
        EXPECT_NE(m.find("KV policy"), std::string::npos) << m;
        EXPECT_NE(m.find("larger pool"), std::string::npos) << m;
    }
    EXPECT_EQ(kv.blocks_of(1).size(), 2u);
    EXPECT_EQ(kv.pool().free_blocks(), 1);
    kv.check_invariants();
    EXPECT_THROW(kv.set_length(1, 64), Error);
    kv.check_invariants();
}

TEST(PagedKv, OccupancyListsEveryPoolBlock) {
    PagedKvCache kv(small_shape(8, KvType::F16, 2, 32));
    kv.set_length(0, 20);
    kv.share_prefix(0, 1, 12);
    const KvOccupancy o = kv.occupancy();
    ASSERT_EQ(int64_t(o.blocks.size()), kv.pool().size());
    EXPECT_EQ(o.block_tokens, 8);
    EXPECT_EQ(o.bytes_allocated, kv.bytes_allocated());
    EXPECT_EQ(o.bytes_allocated, size_t(kv.pool().size()) * 8 * kv.shape().bytes_per_token());
    EXPECT_EQ(o.blocks[0].refs, 2);
    EXPECT_EQ(o.blocks[0].tokens, 8);
    EXPECT_EQ(o.blocks[1].refs, 2);
    EXPECT_EQ(o.blocks[1].tokens, 8);  // 4 for seq 1, 8 for seq 0
    EXPECT_EQ(o.blocks[2].owner, 0);
    EXPECT_EQ(o.blocks[2].tokens, 4);
    for (size_t b = 3; b < o.blocks.size(); ++b) {
        EXPECT_EQ(o.blocks[b].owner, -1);
        EXPECT_EQ(o.blocks[b].refs, 0);
    }
}

TEST(PagedKv, ImpossibleAllocationNamesTheSize) {
    KvShape s = small_shape(16, KvType::F32, 1, 1 << 20);
    s.head_dim_k = s.head_dim_v = 1 << 16;  // ~4.5 MiB per token: TiBs in all
    try {
        PagedKvCache kv(s);
        FAIL() << "allocated an impossible pool";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("MiB"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace fluoro
