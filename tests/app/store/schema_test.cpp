// Opening session databases: a new file gets the current schema with WAL and foreign keys; a
// file of the previous schema version is migrated with its data kept; a file that is not ours,
// is corrupt, or comes from a newer version is refused with its name in the error and is left
// byte for byte untouched.
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
    EXPECT_EQ(store.db().query_int("PRAGMA user_version"), 2);
    EXPECT_EQ(
        store.db().query_int("SELECT count(*) FROM sqlite_master WHERE name IN ('memory_counters', "
                             "'model_hashes')"),
        2);
    const ConversationRecord c = store.load_conversation(1);
    EXPECT_EQ(c.title, "old chat");
    ASSERT_EQ(c.messages.size(), 1u);
    EXPECT_EQ(c.messages[0].content, "hello from v1");
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

}  // namespace
}  // namespace fluoro::app
