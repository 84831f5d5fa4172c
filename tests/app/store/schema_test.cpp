// Opening session databases: a new file gets the current schema with WAL and foreign keys; a
// file of an older schema version (1 or 2; 3 in kv_eviction_store_test) is migrated with its data
// kept; a file that is not ours, is corrupt, or comes from a newer version is refused with its name
// in the error and is left byte for byte untouched.
#include "store/schema.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "store/data_dir.h"
#include "store/store.h"
#include "store_test_util.h"

namespace fluoro::app {
namespace {

using test::read_bytes;
using test::temp_db;
using test::write_bytes;

TEST(SessionSchema, NewFileHasTheCurrentSchemaWalAndForeignKeys) {
    const auto path = temp_db("fresh").parent_path() / "sub" / "dir" / "fresh.db";
    std::filesystem::remove_all(path.parent_path());
    Store store(path);  // creates the directories too
    Database& db = store.db();
    EXPECT_EQ(db.query_int("PRAGMA user_version"), kSchemaVersion);
    EXPECT_EQ(db.query_int("PRAGMA application_id"), kApplicationId);
    EXPECT_EQ(db.query_int("PRAGMA foreign_keys"), 1);
    Statement mode = db.prepare("PRAGMA journal_mode");
    ASSERT_TRUE(mode.step());
    EXPECT_EQ(mode.text(0), "wal");
    // Foreign keys are enforced: a message needs its conversation.
    EXPECT_THROW(store.add_message(42, std::nullopt, "user", "x", true, "t"), StoreError);
}

TEST(SessionSchema, AVersion1FileIsMigratedWithItsDataKept) {
    const auto path = temp_db("v1");
    {
        Database raw(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
        raw.exec(schema_v1_sql());
        raw.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
        raw.exec("PRAGMA user_version = 1");
        raw.exec(
            "INSERT INTO conversations VALUES(1, 'old chat', '', '2024-01-01T00:00:00.000Z');"
            "INSERT INTO messages VALUES(1, 1, NULL, 'user', 'hello from v1', 1, 't');");
        EXPECT_EQ(raw.query_int("SELECT count(*) FROM sqlite_master WHERE name = "
                                "'memory_counters'"),
                  0);
    }
    Store store(path);
    EXPECT_EQ(store.db().query_int("PRAGMA user_version"), kSchemaVersion);
    EXPECT_EQ(
        store.db().query_int("SELECT count(*) FROM sqlite_master WHERE name IN ('memory_counters', "
                             "'model_hashes', 'attention_stats', 'attention_stats_by_run')"),
        4);
    const ConversationRecord c = store.load_conversation(1);
    EXPECT_EQ(c.title, "old chat");
    ASSERT_EQ(c.messages.size(), 1u);
    EXPECT_EQ(c.messages[0].content, "hello from v1");
}

// A version 2 file, built with the version 2 SQL, holding a run with a speculative step and an
// attention snapshot in the version 2 layout: migrated to 3, every row is kept and the new
// fields read as their defaults; the run then takes version 3 rows.
TEST(SessionSchema, AVersion2FileIsMigratedWithItsRowsKept) {
    const auto path = temp_db("v2");
    std::vector<uint8_t> attention_v2;  // int32 layer, int32 head, int64 first_row/n_rows/n_cols
    const auto put = [&](auto v) {
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        attention_v2.insert(attention_v2.end(), p, p + sizeof v);
    };
    put(int32_t(2)), put(int32_t(5)), put(int64_t(4)), put(int64_t(1)), put(int64_t(2));
    put(0.75f), put(0.25f);
    {
        Database raw(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
        raw.exec(schema_v1_sql());
        raw.exec(migrate_v1_to_v2_sql());
        raw.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
        raw.exec("PRAGMA user_version = 2");
        raw.exec(
            "INSERT INTO conversations VALUES(1, 'v2 chat', 'sys', '2025-01-01T00:00:00.000Z');"
            "INSERT INTO messages VALUES(1, 1, NULL, 'user', 'hello from v2', 1, 't');"
            "INSERT INTO messages VALUES(2, 1, 1, 'assistant', 'answer', 1, 't');"
            "INSERT INTO runs VALUES(1, 2, 'send', '/m.gguf', 'M', '', '{}', '{}', '0.1', 'full', "
            "'t', 9, 'eog', NULL, 3, 0, 9, 1.0, 2.0, 3.0, 2, 3000);"
            "INSERT INTO tokens VALUES(1, 0, 42, 'answer', -0.5, x'', 950);"
            "INSERT INTO spec_events VALUES(1, 1, 1, 1500, 'ngram', 1, -1, "
            "x'07000000000000000000000001');"
            "INSERT INTO memory_counters VALUES(1, 1, 900, 1, 2, 3, 4);"
            "INSERT INTO model_hashes VALUES('/m.gguf', 1, 2, 'abc');");
        raw.prepare("INSERT INTO snapshots VALUES(1, 1, 'attention', 1, 1200, ?)")
            .bind(1, std::span<const uint8_t>(attention_v2))
            .run();
        EXPECT_EQ(
            raw.query_int("SELECT count(*) FROM sqlite_master WHERE name = 'attention_stats'"), 0);
    }
    Store store(path);
    EXPECT_EQ(store.db().query_int("PRAGMA user_version"), kSchemaVersion);
    const ConversationRecord c = store.load_conversation(1);
    EXPECT_EQ(c.title, "v2 chat");
    ASSERT_EQ(c.messages.size(), 2u);
    EXPECT_EQ(c.messages[1].content, "answer");
    ASSERT_EQ(c.runs.size(), 1u);
    const RunRecord& r = c.runs[0];
    EXPECT_EQ(r.stop_reason, "eog");
    EXPECT_EQ(r.duration_ns, 3000);
    EXPECT_EQ(r.decode_steps, 2);
    EXPECT_TRUE(r.prompt_ids.empty());
    EXPECT_TRUE(r.prompt_pieces.empty());
    EXPECT_EQ(r.drafted_tokens, 0);
    EXPECT_EQ(r.accepted_tokens, 0);
    ASSERT_EQ(r.tokens.size(), 1u);
    EXPECT_EQ(r.tokens[0].id, 42);
    ASSERT_EQ(r.memory.size(), 1u);
    EXPECT_EQ(r.memory[0].scratch_bytes, 4);
    ASSERT_EQ(r.spec_steps.size(), 1u);
    EXPECT_EQ(r.spec_steps[0].drafter, "ngram");
    EXPECT_EQ(r.spec_steps[0].t_ns, 1500);
    EXPECT_EQ(r.spec_steps[0].bonus, -1);
    EXPECT_EQ(r.spec_steps[0].draft_ns, 0);
    EXPECT_EQ(r.spec_steps[0].verify_ns, 0);
    ASSERT_EQ(r.spec_steps[0].drafted.size(), 1u);
    EXPECT_EQ(r.spec_steps[0].drafted[0].id, 7);
    EXPECT_TRUE(r.spec_steps[0].drafted[0].accepted);
    ASSERT_EQ(r.attention_snapshots.size(), 1u);
    const AttentionSnapshot& at = *r.attention_snapshots[0];
    EXPECT_EQ(at.layer, 2);
    EXPECT_EQ(at.head, 5);
    EXPECT_EQ(at.first_row, 4);
    EXPECT_EQ(at.key_begin, 0);  // version 2 snapshots covered keys from position 0
    EXPECT_EQ(at.weights, (std::vector<float>{0.75f, 0.25f}));
    EXPECT_TRUE(r.attention_stats.empty());
    EXPECT_EQ(store.cached_hash("/m.gguf", 1, 2), "abc");

    // The migrated run takes version 3 rows.
    AttentionStats st;
    st.n_layer = 1;
    st.n_head = 1;
    st.heads = {{0.5f, 1, 0, 0.25f}};
    st.t_ns = 2000;
    store.add_attention_stats(1, st);
    EXPECT_EQ(store.load_run(1).attention_stats.size(), 1u);
}

void expect_refused(const std::filesystem::path& path, const std::string& why) {
    const std::string before = read_bytes(path);
    try {
        Store store(path);
        FAIL() << "opened " << path << " (" << why << ")";
    } catch (const StoreError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
        EXPECT_NE(msg.find(why), std::string::npos) << msg;
        EXPECT_NE(msg.find("left untouched"), std::string::npos) << msg;
    }
    EXPECT_EQ(read_bytes(path), before);
    EXPECT_FALSE(std::filesystem::exists(path.string() + "-wal"));
}

TEST(SessionSchema, ATextFileIsRefusedAndUntouched) {
    const auto path = temp_db("text");
    write_bytes(path, "these are my notes, not a database\n");
    expect_refused(path, "not a Fluoroscope session database");
}

TEST(SessionSchema, AnotherApplicationsSqliteFileIsRefusedAndUntouched) {
    const auto path = temp_db("other_app");
    {
        Database raw(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
        raw.exec("CREATE TABLE photos(id INTEGER PRIMARY KEY, name TEXT)");
    }
    expect_refused(path, "not a Fluoroscope session database");
}

TEST(SessionSchema, ANewerVersionIsRefusedAndUntouched) {
    const auto path = temp_db("newer");
    { Store store(path); }
    {
        Database raw(path, SQLITE_OPEN_READWRITE);
        raw.exec("PRAGMA user_version = 99");
    }
    expect_refused(path, "newer Fluoroscope");
}

TEST(SessionSchema, ACorruptFileIsRefusedAndUntouched) {
    const auto path = temp_db("corrupt");
    {
        Store store(path);
        store.add_conversation("a", "", "t");
    }
    std::string bytes = read_bytes(path);
    ASSERT_GE(bytes.size(), 3 * 4096u);
    for (size_t i = 4096; i < 2 * 4096; ++i) bytes[i] = char(0xA5);  // page 2: a table's root
    write_bytes(path, bytes);
    expect_refused(path, "corrupt");
}

TEST(SessionSchema, DefaultPathFollowsXdg) {
    const char* old_xdg = std::getenv("XDG_DATA_HOME");
    const std::string saved = old_xdg ? old_xdg : "";
    setenv("XDG_DATA_HOME", "/tmp/xdg-test", 1);
    EXPECT_EQ(default_db_path(), "/tmp/xdg-test/fluoroscope/sessions.db");
    setenv("XDG_DATA_HOME", "relative/ignored", 1);
    EXPECT_EQ(default_db_path(),
              std::filesystem::path(std::getenv("HOME")) / ".local/share/fluoroscope/sessions.db");
    if (old_xdg)
        setenv("XDG_DATA_HOME", saved.c_str(), 1);
    else
        unsetenv("XDG_DATA_HOME");
}

TEST(SessionSchema, PrefixCacheFileFollowsXdgCacheHome) {
    const char* old_xdg = std::getenv("XDG_CACHE_HOME");
    const std::string saved = old_xdg ? old_xdg : "";
    setenv("XDG_CACHE_HOME", "/tmp/xdg-cache", 1);
    EXPECT_EQ(prefix_cache_file_for("/models/SmolLM2.Q4_1.gguf", "f16", "cpu"),
              "/tmp/xdg-cache/fluoroscope/prefix-cache/SmolLM2.Q4_1.f16.cpu.fpc");
    setenv("XDG_CACHE_HOME", "relative/ignored", 1);
    EXPECT_EQ(prefix_cache_file_for("m.gguf", "q8_0", "cuda"),
              std::filesystem::path(std::getenv("HOME")) /
                  ".cache/fluoroscope/prefix-cache/m.q8_0.cuda.fpc");
    if (old_xdg)
        setenv("XDG_CACHE_HOME", saved.c_str(), 1);
    else
        unsetenv("XDG_CACHE_HOME");
}

}  // namespace
}  // namespace fluoro::app
