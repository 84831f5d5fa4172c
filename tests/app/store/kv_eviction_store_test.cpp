// Schema v4: the KV policy's evictions (KvEviction events) are recorded by the writer and read back
// equal, kept/evicted positions travel as run-length blobs that round-trip any sequence and refuse
// malformed ones, and a version 3 file made by the version 3 SQL is migrated with its rows kept.
#include <gtest/gtest.h>

#include "store/blob_codec.h"
#include "store/schema.h"
#include "store/store_writer.h"
#include "store_test_util.h"

namespace fluoro::app {
namespace {

using test::temp_db;

void expect_same(const KvEviction& a, const KvEviction& b) {
    EXPECT_EQ(a.step, b.step);
    EXPECT_EQ(a.policy, b.policy);
    EXPECT_EQ(a.budget, b.budget);
    EXPECT_EQ(a.length_before, b.length_before);
    EXPECT_EQ(a.evicted, b.evicted);
    EXPECT_EQ(a.kept, b.kept);
    EXPECT_EQ(a.reasons, b.reasons);
    EXPECT_DOUBLE_EQ(a.ms, b.ms);
    EXPECT_EQ(a.t_ns, b.t_ns);
}

TEST(StoreKvEvictions, WrittenAndReadBackEqual) {
    const auto path = temp_db("kv_evictions");
    const std::vector<Event> events = test::kv_eviction_run(1, 1);
    int64_t id = 0;
    {
        StoreWriter w(path);
        for (const auto& e : events) w.record(e);
        w.flush();
        EXPECT_EQ(w.failures(), 0);
        id = w.last_run_id();
    }
    std::vector<KvEviction> sent;
    for (const auto& e : events)
        if (const auto* k = std::get_if<KvEviction>(&e)) sent.push_back(*k);
    ASSERT_EQ(sent.size(), 2u);
    Store store(path);
    const RunRecord r = store.load_run(id);
    ASSERT_EQ(r.kv_evictions.size(), sent.size());
    for (size_t i = 0; i < sent.size(); ++i) {
        expect_same(r.kv_evictions[i], sent[i]);
        EXPECT_EQ(r.kv_evictions[i].run, uint64_t(id));
    }
    // Deleting the conversation takes its evictions along.
    store.delete_conversation(store.conversation_of_run(id));
    EXPECT_EQ(store.db().query_int("SELECT count(*) FROM kv_evictions"), 0);
}

TEST(StoreKvEvictions, PositionsRoundTripAsRuns) {
    const std::vector<int64_t> cases[] = {
        {}, {0}, {0, 1, 2, 3, 100, 101, 102}, {7, 5, 6, 6, 9}, {-3, -2, 40}};
    for (const auto& c : cases) EXPECT_EQ(decode_positions(encode_positions(c), 64), c);
    // Two runs: 16 bytes each, whatever their length.
    std::vector<int64_t> streaming{0, 1, 2, 3};
    for (int64_t p = 1000; p < 2000; ++p) streaming.push_back(p);
    EXPECT_EQ(encode_positions(streaming).size(), 32u);
    EXPECT_EQ(decode_positions(encode_positions(streaming), 1004), streaming);
}

TEST(StoreKvEvictions, MalformedRowsAreRefused) {
    std::vector<uint8_t> blob = encode_positions(std::vector<int64_t>{4, 5, 6});
    EXPECT_THROW(decode_positions(blob, 2), StoreError);  // more values than the row allows
    blob.pop_back();
    EXPECT_THROW(decode_positions(blob, 64), StoreError);  // not whole records
    std::vector<uint8_t> zero(16, 0);                      // a run of 0 positions
    EXPECT_THROW(decode_positions(zero, 64), StoreError);

    const auto path = temp_db("kv_evictions_bad");
    int64_t id = 0;
    {
        StoreWriter w(path);
        for (const auto& e : test::kv_eviction_run(1, 1)) w.record(e);
        w.flush();
        id = w.last_run_id();
    }
    Store store(path);
    store.db().exec("UPDATE kv_evictions SET reasons = x'00' WHERE step = 3");
    try {
        store.load_run(id);
        FAIL() << "a row with 1 reason for 4 kept positions was read";
    } catch (const StoreError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
        EXPECT_NE(msg.find("1 reasons for 4 kept"), std::string::npos) << msg;
    }
}

// A version 3 file, built with the version 1..3 SQL and holding a run: migrated to the current
// version, the run is kept, has no evictions, and then takes eviction rows.
TEST(StoreKvEvictions, AVersion3FileIsMigratedWithItsRowsKept) {
    const auto path = temp_db("v3_to_v4");
    {
        Database raw(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
        raw.exec(schema_v1_sql());
        raw.exec(migrate_v1_to_v2_sql());
        raw.exec(migrate_v2_to_v3_sql());
        raw.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
        raw.exec("PRAGMA user_version = 3");
        raw.exec(
            "INSERT INTO conversations VALUES(1, 'v3 chat', '', '2025-06-01T00:00:00.000Z');"
            "INSERT INTO messages VALUES(1, 1, NULL, 'user', 'hello from v3', 1, 't');"
            "INSERT INTO messages VALUES(2, 1, 1, 'assistant', 'answer', 1, 't');"
            "INSERT INTO runs(id, message_id, kind, model_path, model_name, model_sha256, "
            "settings, hardware, program_version, telemetry_level, started_at, prompt_tokens, "
            "stop_reason, n_tokens, drafted_tokens) VALUES(1, 2, 'send', '/m.gguf', 'M', '', "
            "'{}', '{}', '0.2', 'full', 't', 9, 'eog', 1, 4);"
            "INSERT INTO tokens VALUES(1, 0, 42, 'answer', -0.5, x'', 950);");
        EXPECT_EQ(raw.query_int("SELECT count(*) FROM sqlite_master WHERE name = 'kv_evictions'"),
                  0);
    }
    Store store(path);
    EXPECT_EQ(store.db().query_int("PRAGMA user_version"), kSchemaVersion);
    EXPECT_EQ(store.db().query_int("SELECT count(*) FROM sqlite_master WHERE name IN "
                                   "('kv_evictions', 'kv_evictions_by_run')"),
              2);
    RunRecord r = store.load_run(1);
    EXPECT_EQ(r.stop_reason, "eog");
    EXPECT_EQ(r.drafted_tokens, 4);
    ASSERT_EQ(r.tokens.size(), 1u);
    EXPECT_EQ(r.tokens[0].piece, "answer");
    EXPECT_TRUE(r.kv_evictions.empty());

    KvEviction e;
    e.step = 2;
    e.policy = "window";
    e.budget = 3;
    e.length_before = 4;
    e.evicted = {0};
    e.kept = {1, 2, 3};
    e.reasons = {1, 1, 1};
    store.add_kv_eviction(1, e);
    r = store.load_run(1);
    ASSERT_EQ(r.kv_evictions.size(), 1u);
    expect_same(r.kv_evictions[0], e);
}

}  // namespace
}  // namespace fluoro::app
