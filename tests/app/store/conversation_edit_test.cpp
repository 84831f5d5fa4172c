// Store::rename_conversation and Store::search_conversations (the workbench's conversation list).
#include <gtest/gtest.h>

#include "store/sqlite_db.h"
#include "store/store.h"
#include "store_test_util.h"

namespace fluoro::app {
namespace {

struct ConversationEdit : ::testing::Test {
    void SetUp() override {
        store = std::make_unique<Store>(test::temp_db("conversation_edit"));
        a = store->add_conversation("Rust lifetimes", "", "2026-11-30T10:00:00Z");
        store->add_message(a, std::nullopt, "user", "explain borrowck", true,
                           "2026-11-30T10:00:00Z");
        b = store->add_conversation("Soup", "", "2026-11-30T11:00:00Z");
        store->add_message(b, std::nullopt, "user", "a 100% tomato_soup recipe", true,
                           "2026-11-30T11:00:00Z");
    }
    std::unique_ptr<Store> store;
    int64_t a = 0, b = 0;
};

TEST_F(ConversationEdit, RenameChangesOnlyThatTitle) {
    store->rename_conversation(a, "Borrow checker");
    const auto list = store->list_conversations();
    ASSERT_EQ(list.size(), 2u);
    EXPECT_EQ(list[0].title, "Borrow checker");
    EXPECT_EQ(list[1].title, "Soup");
}

TEST_F(ConversationEdit, RenamingAMissingConversationThrows) {
    EXPECT_THROW(store->rename_conversation(9999, "x"), StoreError);
}

TEST_F(ConversationEdit, SearchMatchesTitlesAndMessagesIgnoringAsciiCase) {
    auto hits = store->search_conversations("RUST");
    ASSERT_EQ(hits.size(), 1u);
    EXPECT_EQ(hits[0].id, a);
    hits = store->search_conversations("borrowck");
    ASSERT_EQ(hits.size(), 1u);
    EXPECT_EQ(hits[0].id, a);
    EXPECT_EQ(hits[0].messages, 1);
    EXPECT_EQ(store->search_conversations("").size(), 2u);
    EXPECT_TRUE(store->search_conversations("nothing like it").empty());
}

TEST_F(ConversationEdit, SearchTreatsLikeWildcardsAsText) {
    auto hits = store->search_conversations("100%");
    ASSERT_EQ(hits.size(), 1u);
    EXPECT_EQ(hits[0].id, b);
    EXPECT_EQ(store->search_conversations("o_s").size(), 1u);  // "tomato_soup"
    EXPECT_TRUE(store->search_conversations("t_l").empty());   // not "Rust lifetimes"
    EXPECT_TRUE(store->search_conversations("%%%x").empty());
}

}  // namespace
}  // namespace fluoro::app
