// The measurements table (schema v8): round trip, newest first, delete, and a version 7 file
// migrated with its conversations kept.
#include <gtest/gtest.h>

#include "store/measurement_store.h"
#include "store/schema.h"
#include "store/store.h"
#include "store_test_util.h"

namespace fluoro::app {
namespace {

using test::temp_db;

MeasurementRecord record(const std::string& kind, double seconds) {
    MeasurementRecord m;
    m.kind = kind;
    m.model_path = "/models/m.gguf";
    m.headline = kind + " headline";
    m.params_json = R"({"ctx":"512"})";
    m.result_json = R"({"kind":")" + kind + R"(","result":{}})";
    m.seconds = seconds;
    return m;
}

TEST(MeasurementStore, RoundTripsNewestFirstAndDeletes) {
    const auto path = temp_db("measurements");
    Store store(path);
    const int64_t a = add_measurement(store, record("ppl", 1.5));
    const int64_t b = add_measurement(store, record("eval_kv", 2.5));
    std::vector<MeasurementRecord> all = list_measurements(store);
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].id, b);
    EXPECT_EQ(all[1].id, a);
    EXPECT_EQ(all[1].kind, "ppl");
    EXPECT_EQ(all[1].model_path, "/models/m.gguf");
    EXPECT_EQ(all[1].headline, "ppl headline");
    EXPECT_EQ(all[1].params_json, R"({"ctx":"512"})");
    EXPECT_EQ(all[1].result_json, R"({"kind":"ppl","result":{}})");
    EXPECT_EQ(all[1].seconds, 1.5);
    EXPECT_FALSE(all[1].created_at.empty());
    delete_measurement(store, a);
    all = list_measurements(store);
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].id, b);
    EXPECT_THROW(delete_measurement(store, a), StoreError);
}

// Measurements survive closing and reopening the file.
TEST(MeasurementStore, SurvivesReopening) {
    const auto path = temp_db("measurements_reopen");
    {
        Store store(path);
        add_measurement(store, record("bench_spec", 3));
    }
    Store store(path);
    ASSERT_EQ(list_measurements(store).size(), 1u);
    EXPECT_EQ(list_measurements(store)[0].kind, "bench_spec");
}

// A version 7 file (no measurements table) with a conversation: migrated, the conversation kept,
// and measurements can then be stored.
TEST(MeasurementStore, AVersion7FileIsMigrated) {
    const auto path = temp_db("v7_to_v8");
    int64_t conversation = 0;
    {
        Store store(path);
        conversation = store.add_conversation("kept", "", "2026-01-01T00:00:00.000Z");
    }
    {
        Database raw(path, SQLITE_OPEN_READWRITE);
        raw.exec(std::string(test::kBackToV10) +
                 "DROP TABLE measurements; ALTER TABLE cache_events DROP COLUMN tree; "
                 "ALTER TABLE steps DROP COLUMN trace; PRAGMA user_version = 7");
    }
    Store store(path);
    EXPECT_EQ(store.db().query_int("PRAGMA user_version"), kSchemaVersion);
    EXPECT_EQ(store.load_conversation(conversation).title, "kept");
    add_measurement(store, record("ppl", 1));
    EXPECT_EQ(list_measurements(store).size(), 1u);
}

}  // namespace
}  // namespace fluoro::app
