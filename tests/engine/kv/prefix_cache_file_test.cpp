// The prefix cache file (kv/prefix_cache_file.h): a saved cache restored into a fresh KV cache
// holds the same entries and gives logits bit-equal to a fresh prefill; shared prefixes are stored
// once; and every corrupt, truncated, extended or foreign file is refused with an Error naming
// the problem while the cache stays empty and consistent.
#include "kv/prefix_cache_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "decode/sequence.h"
#include "gguf/test_model.h"
#include "kv/paged_kv.h"
#include "kv/prefix_cache.h"
#include "model/model.h"
#include "test_temp.h"

namespace fluoro {
namespace {

constexpr int64_t kSlots = 4;

struct Rig {
    explicit Rig(Model& m, bool head_major = true) : model(m) {
        KvShape ks;
        ks.head_major = head_major;
        ks.n_ctx = 512;
        ks.n_seq = 1 + kSlots;
        ks.pool_tokens = 1024;
        kv = model.create_kv(ks);
        paged = dynamic_cast<PagedKvCache*>(kv.get());
        cache = std::make_unique<PrefixCache>(*paged, 1, kSlots);
        seq = std::make_unique<Sequence>(model, *kv, 0);
        seq->set_prefix_cache(cache.get());
    }
    Model& model;
    std::unique_ptr<KvCache> kv;
    PagedKvCache* paged = nullptr;
    std::unique_ptr<PrefixCache> cache;
    std::unique_ptr<Sequence> seq;
};

class PrefixCacheFileTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        gguf::TestModelSpec spec;
        spec.weight_type = GgmlType::Q8_0;
        path_ = new std::filesystem::path(test::unique_temp_path("prefix_file_small.gguf"));
        gguf::write_test_model(*path_, spec);
        backend_ = new cpu::CpuBackend(2);
        model_ = Model::load(*path_, *backend_).release();
    }
    static void TearDownTestSuite() {
        delete model_;
        delete backend_;
        delete path_;
    }

    static std::vector<int32_t> with_sys(std::initializer_list<int32_t> tail) {
        std::vector<int32_t> v;
        for (int i = 0; i < 53; ++i) v.push_back(int32_t(3 + (i * 13) % 200));
        v.insert(v.end(), tail);
        return v;
    }
    static PrefixCacheKey key(std::string sha = "abc123") {
        return PrefixCacheKey{{{"model_sha256", sha}, {"kv_type", "f16"}, {"n_vocab", "512"}}};
    }
    // A cache holding two conversations on the shared system prompt, and a third live one.
    static void fill(Rig& r) {
        r.seq->prefill(with_sys({5, 6, 7, 8}));
        r.seq->prefill(std::vector<int32_t>{250, 251, 252, 253, 254});
        r.seq->prefill(with_sys({9, 10, 11}));
        r.seq->prefill(std::vector<int32_t>{240, 241});
    }
    static std::set<std::vector<int32_t>> entry_set(const PrefixCache& c) {
        std::set<std::vector<int32_t>> s;
        for (auto& e : c.entries())
            if (!e.empty()) s.insert(e);
        return s;
    }
    static std::vector<std::byte> read(const std::filesystem::path& p) {
        std::ifstream in(p, std::ios::binary);
        std::vector<char> c((std::istreambuf_iterator<char>(in)), {});
        std::vector<std::byte> b(c.size());
        std::memcpy(b.data(), c.data(), c.size());
        return b;
    }
    // Where a file saved under key() starts its body (after magic, version, key and its CRC,
    // body length and body CRC).
    static size_t body_offset() { return 8 + 4 + 4 + key().text().size() + 4 + 8 + 4; }
    // `b` with its body checksum made right again after an edit: a file a buggy or hostile
    // tool wrote, which the checksums alone cannot catch.
    static std::vector<std::byte> with_body_crc(std::vector<std::byte> b) {
        const size_t at = body_offset();
        const uint32_t crc = uint32_t(crc32_z(
            crc32_z(0, nullptr, 0), reinterpret_cast<const Bytef*>(b.data() + at), b.size() - at));
        std::memcpy(b.data() + at - 4, &crc, 4);
        return b;
    }
    static void write(const std::filesystem::path& p, const std::vector<std::byte>& b) {
        std::ofstream out(p, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    }
    // Restoring `file` must fail naming `what`, leaving a fresh cache empty and consistent.
    void expect_refused(const std::filesystem::path& file, const std::string& what,
                        const std::string& label) {
        Rig r(*model_);
        try {
            restore_prefix_cache(*r.cache, 0, key(), file);
            ADD_FAILURE() << label << ": restored a bad file";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(what), std::string::npos)
                << label << ": " << e.what();
            EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
        }
        EXPECT_TRUE(entry_set(*r.cache).empty()) << label;
        EXPECT_EQ(r.paged->length(0), 0) << label;
        r.cache->check_invariants();
        r.paged->check_invariants();
    }

    static inline std::filesystem::path* path_ = nullptr;
    static inline cpu::CpuBackend* backend_ = nullptr;
    static inline Model* model_ = nullptr;
};

TEST_F(PrefixCacheFileTest, RoundTripRestoresEntriesAndExactLogits) {
    const auto file = test::unique_temp_path("round_trip.fpc");
    Rig a(*model_);
    fill(a);
    const std::vector<int32_t> live(a.seq->prefix_cacheable().begin(),
                                    a.seq->prefix_cacheable().end());
    ASSERT_EQ(live.size(), 2u);
    const PrefixCacheExtra extra{live, 0};
    const PrefixCacheFileStats saved =
        save_prefix_cache(*a.cache, key(), file, std::span<const PrefixCacheExtra>(&extra, 1));
    auto want = entry_set(*a.cache);
    want.insert(live);
    EXPECT_EQ(saved.entries, int64_t(want.size()));
    // The 53-token system prompt is stored once, not per conversation.
    EXPECT_EQ(saved.tokens - saved.rows, 53);
    EXPECT_EQ(saved.file_bytes, std::filesystem::file_size(file));

    Rig b(*model_);
    const PrefixCacheFileStats restored = restore_prefix_cache(*b.cache, 0, key(), file);
    EXPECT_EQ(restored.entries, saved.entries);
    EXPECT_EQ(restored.skipped, 0);
    EXPECT_EQ(entry_set(*b.cache), want);
    EXPECT_EQ(b.paged->length(0), 0);
    b.cache->check_invariants();
    b.paged->check_invariants();
    // A new conversation on the system prompt reuses it from the restored cache, and its logits
    // equal a fresh prefill's bit for bit.
    const std::vector<int32_t> c = with_sys({12, 13});
    PrefillStats st;
    // Copies: a returned span is the model's logits buffer, which the next forward overwrites.
    const auto ls = b.seq->prefill(c, &st);
    const std::vector<float> l(ls.begin(), ls.end());
    EXPECT_TRUE(st.from_prefix_cache);
    EXPECT_EQ(st.reused_tokens, 53);
    auto kv = model_->create_kv(512, 1, KvType::F16);
    Sequence fresh(*model_, *kv, 0);
    const auto f = fresh.prefill(c);
    ASSERT_EQ(l.size(), f.size());
    EXPECT_EQ(std::memcmp(l.data(), f.data(), f.size() * sizeof(float)), 0);
    // The restored copy of the first conversation continues exactly too.
    const std::vector<int32_t> a2 = with_sys({5, 6, 7, 8, 1});
    const auto l2s = b.seq->prefill(a2, &st);
    const std::vector<float> l2(l2s.begin(), l2s.end());
    EXPECT_EQ(st.reused_tokens, int64_t(a2.size()) - 1);
    auto kv2 = model_->create_kv(512, 1, KvType::F16);
    Sequence fresh2(*model_, *kv2, 0);
    const auto f2 = fresh2.prefill(a2);
    EXPECT_EQ(std::memcmp(l2.data(), f2.data(), f2.size() * sizeof(float)), 0);
}

// The file stores rows token-major whatever the cache's layout (KvShape::head_major): a file saved
// from a head-major cache restores into a token-major one (the CUDA backend's) and the other way,
// and a conversation continued from the restored prefix gives a fresh prefill's logits bit for
// bit (the test model has 2 KV heads, so a head written to the wrong place would show).
TEST_F(PrefixCacheFileTest, AFileOfEitherLayoutRestoresIntoTheOther) {
    for (const bool from_head_major : {true, false}) {
        const auto file = test::unique_temp_path("layout.fpc");
        Rig a(*model_, from_head_major);
        fill(a);
        save_prefix_cache(*a.cache, key(), file, {});
        Rig b(*model_, !from_head_major);
        restore_prefix_cache(*b.cache, 0, key(), file);
        EXPECT_EQ(entry_set(*b.cache), entry_set(*a.cache));
        const std::vector<int32_t> c = with_sys({5, 6, 7, 8, 3});
        PrefillStats st;
        const auto ls = b.seq->prefill(c, &st);
        const std::vector<float> l(ls.begin(), ls.end());
        EXPECT_TRUE(st.from_prefix_cache);
        EXPECT_EQ(st.reused_tokens, int64_t(c.size()) - 1);
        auto kv = model_->create_kv(512, 1, KvType::F16);
        Sequence fresh(*model_, *kv, 0);
        const auto f = fresh.prefill(c);
        ASSERT_EQ(l.size(), f.size());
        EXPECT_EQ(std::memcmp(l.data(), f.data(), f.size() * sizeof(float)), 0)
            << "saved " << (from_head_major ? "head-major" : "token-major");
    }
}

TEST_F(PrefixCacheFileTest, FewerSlotsKeepTheMostRecentEntries) {
    const auto file = test::unique_temp_path("fewer_slots.fpc");
    Rig a(*model_);
    fill(a);
    save_prefix_cache(*a.cache, key(), file);
    const auto saved = entry_set(*a.cache);
    ASSERT_EQ(saved.size(), 3u);
    KvShape ks;
    ks.n_ctx = 512;
    ks.n_seq = 1 + 1;
    ks.pool_tokens = 1024;
    auto kv = model_->create_kv(ks);
    auto* paged = dynamic_cast<PagedKvCache*>(kv.get());
    PrefixCache one(*paged, 1, 1);
    const PrefixCacheFileStats st = restore_prefix_cache(one, 0, key(), file);
    EXPECT_EQ(st.entries, 3);  // each stored, the older ones evicted by the newer
    const auto kept = entry_set(one);
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(*kept.begin(), with_sys({9, 10, 11}));  // the most recently used
    one.check_invariants();
    paged->check_invariants();
}

TEST_F(PrefixCacheFileTest, ForeignCorruptTruncatedAndExtendedFilesAreRefused) {
    const auto good = test::unique_temp_path("good.fpc");
    Rig a(*model_);
    fill(a);
    save_prefix_cache(*a.cache, key(), good);
    const std::vector<std::byte> bytes = read(good);
    ASSERT_GT(bytes.size(), 1000u);
    const auto bad = test::unique_temp_path("bad.fpc");

    // Another model file: refused, naming the field.
    {
        Rig r(*model_);
        try {
            restore_prefix_cache(*r.cache, 0, key("fff999"), good);
            ADD_FAILURE() << "restored a foreign file";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("model_sha256 is abc123, here fff999"),
                      std::string::npos)
                << e.what();
        }
        EXPECT_TRUE(entry_set(*r.cache).empty());
    }
    // Every truncation point in the header, and a spread of them through the body.
    for (size_t cut = 0; cut < bytes.size(); cut += (cut < 128 ? 1 : bytes.size() / 61)) {
        write(bad, std::vector<std::byte>(bytes.begin(), bytes.begin() + std::ptrdiff_t(cut)));
        const std::string label = "truncated to " + std::to_string(cut) + " bytes";
        Rig r(*model_);
        EXPECT_THROW(restore_prefix_cache(*r.cache, 0, key(), bad), FormatError) << label;
        EXPECT_TRUE(entry_set(*r.cache).empty()) << label;
    }
    // One flipped bit anywhere: the magic, the version, the key, the lengths, the checksums or
    // the body.
    for (size_t at = 0; at < bytes.size(); at += (at < 128 ? 1 : bytes.size() / 53)) {
        std::vector<std::byte> b = bytes;
        b[at] ^= std::byte{0x10};
        write(bad, b);
        const std::string label = "bit flipped at byte " + std::to_string(at);
        Rig r(*model_);
        EXPECT_THROW(restore_prefix_cache(*r.cache, 0, key(), bad), FormatError) << label;
        EXPECT_TRUE(entry_set(*r.cache).empty()) << label;
    }
    std::vector<std::byte> longer = bytes;
    longer.push_back(std::byte{0});
    write(bad, longer);
    expect_refused(bad, "truncated or extended", "one byte appended");
    write(bad, {});
    expect_refused(bad, "truncated", "empty file");
    expect_refused(test::unique_temp_path("missing.fpc"), "cannot open", "missing file");
}

// A file whose checksums are right but whose contents lie (written by a buggy or hostile tool):
// the structural checks still refuse it.
TEST_F(PrefixCacheFileTest, ValidChecksumsDoNotMakeBadContentsTrusted) {
    const auto good = test::unique_temp_path("lying.fpc");
    Rig a(*model_);
    a.seq->prefill(with_sys({5}));
    a.seq->prefill(std::vector<int32_t>{250});
    save_prefix_cache(*a.cache, key(), good);
    const std::vector<std::byte> bytes = read(good);
    // Rewrites one u32 of the body and fixes the body checksum.
    const auto patched = [&](size_t at, uint32_t value) {
        std::vector<std::byte> b = bytes;
        std::memcpy(b.data() + body_offset() + at, &value, 4);
        return with_body_crc(std::move(b));
    };
    const auto bad = test::unique_temp_path("lying_bad.fpc");
    // Layout: n_entries, then entry 0: parent, shared, n_tokens, tokens...
    write(bad, patched(4, 0));  // entry 0 names itself as parent
    expect_refused(bad, "bad parent", "self parent");
    write(bad, patched(8, 1));  // shares a token without a parent
    expect_refused(bad, "bad parent", "shared without parent");
    write(bad, patched(16, 5000));  // token id outside the 512-token vocabulary
    expect_refused(bad, "outside the vocabulary", "token id");
    write(bad, patched(16, 0x80000000u));  // a negative token id
    expect_refused(bad, "outside the vocabulary", "negative token");
    write(bad, patched(12, 100000));  // more tokens than the context
    expect_refused(bad, "tokens (context is 512)", "token count");
    write(bad, patched(12, 3));  // fewer tokens: the rows no longer line up with the body's end
    expect_refused(bad, "unexpected bytes", "short count");
    write(bad, patched(0, 7));  // more entries than there are
    expect_refused(bad, "truncated", "entry count");
}

// A checksum-valid file whose K/V rows hold a NaN or an infinity: restored, it made every request
// sharing the prefix fail with "logit is NaN", restart after restart, and the server saved the
// poisoned entry again. Refused, naming the entry, layer and row; the largest finite half
// restores.
TEST_F(PrefixCacheFileTest, NonFiniteRowsAreRefused) {
    const auto good = test::unique_temp_path("poison_good.fpc");
    Rig a(*model_);
    a.seq->prefill(with_sys({5}));
    a.seq->prefill(std::vector<int32_t>{250});
    save_prefix_cache(*a.cache, key(), good);
    const std::vector<std::byte> bytes = read(good);
    // One entry: n_entries, parent, shared (0), n_tokens, the tokens, then its rows to the end.
    uint32_t n = 0;
    std::memcpy(&n, bytes.data() + body_offset() + 12, 4);
    ASSERT_EQ(n, 54u);
    const KvShape& shape = a.paged->shape();
    ASSERT_EQ(shape.type, KvType::F16);
    const size_t rows_at = body_offset() + 16 + 4 * size_t(n);
    ASSERT_EQ(rows_at + shape.bytes_per_token() * n, bytes.size());
    const auto with_half = [&](size_t at, uint16_t half) {
        std::vector<std::byte> b = bytes;
        std::memcpy(b.data() + at, &half, 2);
        return with_body_crc(std::move(b));
    };
    const auto bad = test::unique_temp_path("poison_bad.fpc");
    write(bad, with_half(rows_at, 0x7E00));  // a quiet NaN: layer 0's first K value
    expect_refused(bad, "entry 0: layer 0 K row 0 holds a non-finite value", "NaN");
    write(bad, with_half(bytes.size() - 2, 0xFC00));  // -inf: the last layer's last V value
    expect_refused(bad,
                   "layer " + std::to_string(shape.n_layer - 1) + " V row " +
                       std::to_string(n - 1) + " holds a non-finite value",
                   "-inf");
    write(bad, with_half(bytes.size() - 2, 0x7BFF));  // 65504, the largest finite half
    Rig r(*model_);
    EXPECT_EQ(restore_prefix_cache(*r.cache, 0, key(), bad).entries, 1);
}

// Only a regular file is read, and only after its magic: a directory at the path was reported as
// "std::bad_alloc", a FIFO blocked `serve` in open() before it listened, and a foreign sparse file
// was read whole (1 GiB: 1.34 GB of memory) before its first eight bytes were checked.
TEST_F(PrefixCacheFileTest, OnlyRegularFilesThatStartLikeOursAreRead) {
    const auto dir = test::unique_temp_path("cache_dir.fpc");
    std::filesystem::create_directories(dir);
    expect_refused(dir, "not a regular file", "directory");
    const auto fifo = test::unique_temp_path("cache_fifo.fpc");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
    expect_refused(fifo, "not a regular file", "FIFO");
    const auto huge = test::unique_temp_path("huge.fpc");
    write(huge, {std::byte{'N'}, std::byte{'O'}, std::byte{'T'}, std::byte{'O'}, std::byte{'U'},
                 std::byte{'R'}, std::byte{'S'}, std::byte{'!'}});
    std::filesystem::resize_file(huge, uint64_t(64) << 30);  // sparse: no disk, 64 GiB to read
    expect_refused(huge, "bad magic", "64 GiB foreign file");
    std::filesystem::remove(huge);
    std::filesystem::remove(fifo);
    std::filesystem::remove(dir);
}

TEST_F(PrefixCacheFileTest, SavingIsAtomicAndReportsWhereItFailed) {
    const auto file = test::unique_temp_path("atomic.fpc");
    Rig a(*model_);
    fill(a);
    save_prefix_cache(*a.cache, key(), file);
    const auto before = read(file);
    // A target whose directory is a regular file cannot be written: the error names it, and no
    // temporary file is left behind.
    const auto blocker = test::unique_temp_path("not_a_dir");
    write(blocker, {std::byte{1}});
    try {
        save_prefix_cache(*a.cache, key(), blocker / "cache.fpc");
        ADD_FAILURE() << "saved under a regular file";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("cache.fpc"), std::string::npos) << e.what();
    }
    // Saving again replaces the file whole; no temporary files remain beside it.
    a.seq->prefill(with_sys({42}));
    save_prefix_cache(*a.cache, key(), file);
    EXPECT_NE(read(file), before);
    for (const auto& e : std::filesystem::directory_iterator(file.parent_path()))
        EXPECT_EQ(e.path().string().find(file.filename().string() + ".tmp"), std::string::npos)
            << e.path();
}

}  // namespace
}  // namespace fluoro
