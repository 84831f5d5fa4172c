// Schema v9: the prefix cache's radix tree each request left (PrefixCacheEvent::tree) is stored
// with its cache event and exported/imported with the conversation, so a reopened run draws the
// tree it drew live; a malformed tree, in the database or a document, is refused by name; a
// version 8 file is migrated with its rows kept (no tree).
#include <gtest/gtest.h>

#include "core/error.h"
#include "export/json_export.h"
#include "store/prefix_tree_codec.h"
#include "store/schema.h"
#include "store/sqlite_db.h"
#include "store/store.h"
#include "store/store_writer.h"
#include "store_test_util.h"

namespace fluoro::app {
namespace {

using test::synthetic_run;
using test::temp_db;

//  root ── "<|im_start|>system" (6 tokens, shared by 2) ─┬─ " You are" (entry 1, matched 1 of 2)
//                                                         └─ " Be brief" (entry 0)
std::vector<PrefixTreeNode> tree() {
    return {{-1, 0, 0, "", -1, -1, 2, 0, 0},
            {0, 6, 6, "<|im_start|>system", -1, -1, 2, 6, 600},
            {1, 8, 2, " You are", 1, 1, 1, 1, 200},
            {1, 8, 2, " Be brief", 0, 0, 1, 0, 200}};
}

void expect_tree(const std::vector<PrefixTreeNode>& got) {
    const std::vector<PrefixTreeNode> want = tree();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(got[i].parent, want[i].parent) << i;
        EXPECT_EQ(got[i].depth, want[i].depth) << i;
        EXPECT_EQ(got[i].edge_tokens, want[i].edge_tokens) << i;
        EXPECT_EQ(got[i].text, want[i].text) << i;
        EXPECT_EQ(got[i].slot, want[i].slot) << i;
        EXPECT_EQ(got[i].recency, want[i].recency) << i;
        EXPECT_EQ(got[i].entries, want[i].entries) << i;
        EXPECT_EQ(got[i].matched, want[i].matched) << i;
        EXPECT_EQ(got[i].bytes, want[i].bytes) << i;
    }
}

int64_t write_with_tree(const std::filesystem::path& path) {
    std::vector<Event> ev = synthetic_run(1, 1, RunKind::Send, 0, "hello", {"a", "b"});
    int found = 0;
    for (Event& e : ev)
        if (auto* c = std::get_if<PrefixCacheEvent>(&e)) {  // the run's one report
            c->cache_entries = 2;
            c->cache_tokens = 16;
            c->tree = tree();
            ++found;
        }
    EXPECT_EQ(found, 1);
    return test::record_events(path, ev);
}

TEST(PrefixTreeStore, TheTreeIsStoredExportedAndImported) {
    const auto path = temp_db("prefix_tree");
    const int64_t id = write_with_tree(path);
    Store store(path);
    const RunRecord r = store.load_run(id);
    ASSERT_EQ(r.cache_events.size(), 1u);
    expect_tree(r.cache_events[0].tree);
    const ConversationRecord conv = store.load_conversation(store.conversation_of_run(id));
    const ConversationRecord back = conversation_from_json(conversation_to_json(conv));
    ASSERT_EQ(back.runs.size(), 1u);
    ASSERT_EQ(back.runs[0].cache_events.size(), 1u);
    expect_tree(back.runs[0].cache_events[0].tree);
}

TEST(PrefixTreeStore, AMalformedTreeIsRefusedByName) {
    EXPECT_TRUE(decode_prefix_tree("", "x").empty());
    auto error_of = [](const std::string& text) -> std::string {
        try {
            decode_prefix_tree(text, "run 3");
        } catch (const Error& e) {
            return e.what();
        }
        return "";
    };
    EXPECT_NE(error_of("{").find("run 3: the prefix tree is not valid JSON"), std::string::npos);
    EXPECT_NE(error_of("{}").find("not a list"), std::string::npos);
    nlohmann::json j = prefix_tree_json(tree());
    j[2]["parent"] = 3;  // after itself
    EXPECT_NE(error_of(j.dump()).find("node 2: parent 3 does not come before it"),
              std::string::npos);
    j = prefix_tree_json(tree());
    j[0]["parent"] = 0;
    EXPECT_NE(error_of(j.dump()).find("the root's must be -1"), std::string::npos);
    j = prefix_tree_json(tree());
    j[1]["matched"] = 7;  // more than its 6-token edge
    EXPECT_NE(error_of(j.dump()).find("'matched' exceeds"), std::string::npos);
    j = prefix_tree_json(tree());
    j[3].erase("text");
    EXPECT_NE(error_of(j.dump()).find("node 3: 'text' missing"), std::string::npos);
    j = prefix_tree_json(tree());
    j[1]["bytes"] = -5;
    EXPECT_NE(error_of(j.dump()).find("'bytes' is -5"), std::string::npos);

    // In the database: loading the run names the file and the run.
    const auto path = temp_db("prefix_tree_bad");
    const int64_t id = write_with_tree(path);
    {
        Database raw(path, SQLITE_OPEN_READWRITE);
        raw.exec("UPDATE cache_events SET tree = '[{\"parent\": 5}]'");
    }
    Store store(path);
    try {
        store.load_run(id);
        FAIL() << "a malformed tree was loaded";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("run " + std::to_string(id)), std::string::npos)
            << e.what();
    }
}

TEST(PrefixTreeStore, AVersion8FileIsMigratedWithItsRowsKept) {
    const auto path = temp_db("v8_to_v9");
    const int64_t id = write_with_tree(path);
    {
        Database raw(path, SQLITE_OPEN_READWRITE);
        raw.exec(std::string(test::kBackToV10) +
                 "ALTER TABLE steps DROP COLUMN trace; ALTER TABLE cache_events DROP COLUMN tree; "
                 "PRAGMA user_version = 8");
    }
    Store store(path);
    EXPECT_EQ(store.db().query_int("PRAGMA user_version"), kSchemaVersion);
    const RunRecord r = store.load_run(id);
    ASSERT_EQ(r.cache_events.size(), 1u);
    EXPECT_TRUE(r.cache_events[0].tree.empty());  // not recorded then
    EXPECT_EQ(r.cache_events[0].cache_entries, 2);
}

}  // namespace
}  // namespace fluoro::app
