// Recording through the writer thread: a run's events become a conversation with messages, a run
// and its rows, read back equal; regenerate and edit make branches; a run that never finished
// leaves its text so far, marked incomplete; a full disk is reported and recording goes on; a
// conversation that starts with turns (continued, or an API request's history) keeps them.
#include "store/store_writer.h"

#include <gtest/gtest.h>

#include "store_test_util.h"

namespace fluoro::app {
namespace {

using test::synthetic_run;
using test::temp_db;

void record_all(StoreWriter& w, const std::vector<Event>& events) {
    for (const auto& e : events) w.record(e);
}

TEST(StoreWriter, ARunIsStoredAndReadBackEqual) {
    const auto path = temp_db("writer_basic");
    const auto events =
        synthetic_run(1, 1, RunKind::Send, 0, "Hi there", {"Hel", "lo", " wörld", "!"});
    {
        StoreWriter w(path);
        record_all(w, events);
        w.flush();
        EXPECT_EQ(w.failures(), 0);
        EXPECT_GT(w.last_run_id(), 0);
    }
    Store store(path);
    const auto list = store.list_conversations();
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0].title, "Hi there");
    EXPECT_EQ(list[0].incomplete, 0);
    const ConversationRecord c = store.load_conversation(list[0].id);
    ASSERT_EQ(c.messages.size(), 2u);
    EXPECT_EQ(c.messages[0].role, "user");
    EXPECT_EQ(c.messages[0].content, "Hi there");
    EXPECT_EQ(c.messages[1].role, "assistant");
    EXPECT_EQ(c.messages[1].content, "Hello wörld!");
    EXPECT_TRUE(c.messages[1].complete);
    EXPECT_EQ(c.messages[1].parent_id, c.messages[0].id);
    ASSERT_EQ(c.runs.size(), 1u);
    const RunRecord& r = c.runs[0];
    EXPECT_EQ(r.message_id, c.messages[1].id);
    EXPECT_EQ(r.stop_reason, "eog");
    EXPECT_EQ(r.started_at, "2023-11-14T22:13:20.123Z");
    EXPECT_EQ(r.telemetry_level, "full");
    EXPECT_NE(r.settings_json.find("\"max_tokens\""), std::string::npos);
    ASSERT_EQ(r.tokens.size(), 4u);
    const auto& t2 = std::get<TokenEvent>(events[6]);
    EXPECT_EQ(r.tokens[2].piece, t2.piece);
    EXPECT_EQ(r.tokens[2].logprob, t2.logprob);
    ASSERT_EQ(r.tokens[2].top.size(), 2u);
    EXPECT_EQ(r.tokens[2].top[1].id, 3);
    EXPECT_EQ(r.tokens[2].top[1].logprob, -2.25f);
    ASSERT_EQ(r.steps.size(), 4u);
    EXPECT_EQ(r.steps[0].phase, StepPhase::Prefill);
    EXPECT_EQ(r.steps[3].op_ns[size_t(TimeCategory::Matmul)], 503);
    ASSERT_EQ(r.kv_snapshots.size(), 1u);
    EXPECT_EQ(r.kv_snapshots[0]->blocks.size(), 2u);
    EXPECT_EQ(r.kv_snapshots[0]->blocks[0].tokens, 10);
    EXPECT_EQ(r.cache_events.size(), 1u);
    EXPECT_EQ(r.memory.size(), 1u);
    EXPECT_EQ(r.memory[0].kv_used_bytes, 300);
}

TEST(StoreWriter, RegenerateAndEditBranchTheConversation) {
    const auto path = temp_db("writer_branches");
    {
        StoreWriter w(path);
        record_all(w, synthetic_run(1, 7, RunKind::Send, 0, "one", {"a"}));
        record_all(w, synthetic_run(2, 7, RunKind::Send, 2, "two", {"b"}));
        record_all(w, synthetic_run(3, 7, RunKind::Regenerate, 3, "", {"c"}));
        record_all(w, synthetic_run(4, 7, RunKind::Edit, 0, "one again", {"d"}));
    }
    Store store(path);
    const ConversationRecord c = store.load_conversation(store.list_conversations().at(0).id);
    // one, a, two, b, c (answers two too), one again, d
    ASSERT_EQ(c.messages.size(), 7u);
    EXPECT_EQ(c.messages[4].content, "c");
    EXPECT_EQ(c.messages[4].parent_id, c.messages[2].id);  // regenerated: same question
    EXPECT_EQ(c.messages[5].content, "one again");
    EXPECT_FALSE(c.messages[5].parent_id.has_value());  // edited first message: a new root
    EXPECT_EQ(c.messages[6].parent_id, c.messages[5].id);
    EXPECT_EQ(c.runs.size(), 4u);
}

TEST(StoreWriter, AConversationStartedWithTurnsStoresThemBeforeItsFirstRun) {
    const auto path = temp_db("writer_history");
    {
        StoreWriter w(path);
        w.record(ConversationStarted{3, "be brief", {{"user", "one"}, {"assistant", "a"}}});
        record_all(w, synthetic_run(1, 3, RunKind::Send, 2, "two", {"b"}));
        w.record(ConversationStarted{4, "", {{"user", "unasked"}, {"assistant", "x"}}});
    }
    Store store(path);
    const auto list = store.list_conversations();
    ASSERT_EQ(list.size(), 1u) << "a conversation nothing was asked in is not stored";
    EXPECT_EQ(list[0].title, "one");  // its first user message, not the run's
    const ConversationRecord c = store.load_conversation(list[0].id);
    ASSERT_EQ(c.messages.size(), 4u);
    const std::vector<std::pair<std::string, std::string>> want{
        {"user", "one"}, {"assistant", "a"}, {"user", "two"}, {"assistant", "b"}};
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(c.messages[i].role, want[i].first) << i;
        EXPECT_EQ(c.messages[i].content, want[i].second) << i;
        EXPECT_TRUE(c.messages[i].complete) << i;
        if (i > 0) {
            EXPECT_EQ(c.messages[i].parent_id, c.messages[i - 1].id) << i;
        }
    }
    EXPECT_FALSE(c.messages[0].parent_id.has_value());
    ASSERT_EQ(c.runs.size(), 1u);
    EXPECT_EQ(c.runs[0].message_id, c.messages[3].id);
}

// NewConversation::title: stored as named (whole, not cut like a message is), not as its first
// message.
TEST(StoreWriter, ANamedConversationIsStoredUnderItsName) {
    const auto path = temp_db("writer_named");
    const std::string name(70, 'n');
    {
        StoreWriter w(path);
        w.record(ConversationStarted{2, "", {{"user", "one"}, {"assistant", "a"}}, 0, name});
        record_all(w, synthetic_run(1, 2, RunKind::Send, 2, "two", {"b"}));
    }
    Store store(path);
    const auto list = store.list_conversations();
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0].title, name);
}

// NewConversation::resume: the engine takes a conversation up again under its id; the store goes
// on with the same conversation, from the turns it was given.
TEST(StoreWriter, AResumedConversationGoesOnWhereItWas) {
    const auto path = temp_db("writer_resume");
    {
        StoreWriter w(path);
        w.record(ConversationStarted{1, "", {}});
        record_all(w, synthetic_run(1, 1, RunKind::Send, 0, "mine", {"a"}));
        w.record(ConversationStarted{2, "", {}});
        record_all(w, synthetic_run(2, 2, RunKind::Send, 0, "a request", {"r"}));
        w.record(ConversationStarted{1, "", {{"user", "mine"}, {"assistant", "a"}}});
        record_all(w, synthetic_run(3, 1, RunKind::Send, 2, "mine again", {"b"}));
    }
    Store store(path);
    const auto list = store.list_conversations();
    ASSERT_EQ(list.size(), 2u);
    const ConversationRecord c = store.load_conversation(1);
    ASSERT_EQ(c.messages.size(), 4u);
    EXPECT_EQ(c.messages[2].content, "mine again");
    EXPECT_EQ(c.messages[2].parent_id, c.messages[1].id);
    EXPECT_EQ(c.runs.size(), 2u);
}

TEST(StoreWriter, AnUnfinishedRunLeavesItsTextMarkedIncomplete) {
    const auto path = temp_db("writer_unfinished");
    {
        StoreWriter w(path);
        record_all(w, synthetic_run(1, 1, RunKind::Send, 0, "q", {"par", "tial"}, false));
    }
    Store store(path);
    const ConversationRecord c = store.load_conversation(1);
    ASSERT_EQ(c.messages.size(), 2u);
    EXPECT_FALSE(c.messages[1].complete);
    EXPECT_EQ(c.messages[1].content, "partial");
    EXPECT_FALSE(c.runs.at(0).stop_reason.has_value());
    EXPECT_EQ(store.list_conversations().at(0).incomplete, 1);
}

TEST(StoreWriter, AFullDiskIsReportedAndRecordingGoesOn) {
    const auto path = temp_db("writer_full");
    std::vector<std::string> errors;
    StoreWriterOptions opt;
    opt.on_error = [&](const std::string& e) { errors.push_back(e); };
    StoreWriter w(path, opt);
    w.flush();
    const int64_t pages = [&] {
        Store probe(path);
        return probe.db().query_int("PRAGMA page_count");
    }();
    w.set_max_page_count(pages + 2);
    const std::vector<std::string> big(400, std::string(200, 'x'));
    record_all(w, synthetic_run(1, 1, RunKind::Send, 0, "fill the disk", big));
    w.flush();
    EXPECT_GE(w.failures(), 1);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors[0].find("full"), std::string::npos) << errors[0];
    EXPECT_NE(errors[0].find(path.string()), std::string::npos) << errors[0];

    w.set_max_page_count(1000000);  // space again
    record_all(w, synthetic_run(2, 2, RunKind::Send, 0, "after", {"ok"}));
    w.flush();
    Store store(path);
    const auto list = store.list_conversations();
    ASSERT_FALSE(list.empty());
    const ConversationRecord c = store.load_conversation(list.back().id);
    EXPECT_EQ(c.title, "after");
    EXPECT_EQ(c.messages.back().content, "ok");
    EXPECT_TRUE(c.messages.back().complete);
}

}  // namespace
}  // namespace fluoro::app
