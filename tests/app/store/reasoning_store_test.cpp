// Schema v6 / conversation format 4: the reasoning split of a run (per token: split, reasoning,
// reasoning_text, answer_text; per run: reasoning tokens and time) is stored, read back, replayed
// and exported as it was made live, so a reopened conversation shows the model's thinking as a
// block instead of raw <think> text. Rows and documents from before carry no split.
#include <gtest/gtest.h>

#include "export/json_export.h"
#include "replay/replay.h"
#include "store/store.h"
#include "store/store_writer.h"
#include "store_test_util.h"

namespace fluoro::app {
namespace {

using test::synthetic_run;
using test::temp_db;

// "<think>", "plan", "</think>", "Hi": a reply whose first three tokens are the reasoning.
std::vector<Event> thinking_run() {
    std::vector<Event> ev =
        synthetic_run(1, 1, RunKind::Send, 0, "hello", {"<think>", "plan", "</think>", "Hi"});
    int i = 0;
    for (Event& e : ev) {
        auto* t = std::get_if<TokenEvent>(&e);
        if (!t) continue;
        t->split = true;
        t->reasoning = i < 3;
        t->reasoning_text = i == 1 ? "plan" : "";
        t->answer_text = i == 3 ? "Hi" : "";
        ++i;
    }
    auto& f = std::get<RunFinished>(ev.back());
    f.reasoning_tokens = 3;
    f.reasoning_ns = 2950;
    f.reasoning_text = "plan";
    f.answer_text = "Hi";
    return ev;
}

void expect_split(const std::vector<TokenEvent>& tokens) {
    ASSERT_EQ(tokens.size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_TRUE(tokens[i].split) << i;
        EXPECT_EQ(tokens[i].reasoning, i < 3) << i;
    }
    EXPECT_EQ(tokens[1].reasoning_text, "plan");
    EXPECT_EQ(tokens[0].reasoning_text, "");
    EXPECT_EQ(tokens[3].answer_text, "Hi");
}

TEST(ReasoningStore, TheSplitIsStoredReplayedAndExported) {
    const auto path = temp_db("reasoning");
    int64_t id = 0;
    {
        StoreWriter w(path);
        for (const Event& e : thinking_run()) w.record(e);
        w.flush();
        ASSERT_EQ(w.failures(), 0);
        id = w.last_run_id();
    }
    Store store(path);
    const RunRecord r = store.load_run(id);
    EXPECT_EQ(r.reasoning_tokens, 3);
    EXPECT_EQ(r.reasoning_ns, 2950);
    expect_split(r.tokens);

    // Replayed, the run finishes with the split a live one had.
    const ConversationRecord c = store.load_conversation(store.conversation_of_run(id));
    const std::vector<Event> events = run_events(c, c.runs.at(0));
    const RunFinished& f = std::get<RunFinished>(events.back());
    EXPECT_EQ(f.reasoning_tokens, 3);
    EXPECT_EQ(f.reasoning_ns, 2950);
    EXPECT_EQ(f.reasoning_text, "plan");
    EXPECT_EQ(f.answer_text, "Hi");

    // Exported and imported: the same.
    const ConversationRecord back = conversation_from_json(conversation_to_json(c));
    ASSERT_EQ(back.runs.size(), 1u);
    EXPECT_EQ(back.runs[0].reasoning_tokens, 3);
    EXPECT_EQ(back.runs[0].reasoning_ns, 2950);
    expect_split(back.runs[0].tokens);
}

// A version 3 document (before the split) imports with no split known; a version 4 document must
// have the fields.
TEST(ReasoningStore, OlderDocumentsHaveNoSplitNewerOnesNeedIt) {
    const auto path = temp_db("reasoning_doc");
    int64_t id = 0;
    {
        StoreWriter w(path);
        for (const Event& e : thinking_run()) w.record(e);
        w.flush();
        id = w.last_run_id();
    }
    Store store(path);
    nlohmann::json doc =
        conversation_to_json(store.load_conversation(store.conversation_of_run(id)));
    for (auto& t : doc["runs"][0]["tokens"]) t.erase("reasoning_text");
    EXPECT_THROW(conversation_from_json(doc), Error);  // version 4 without the field
    doc["version"] = 3;
    for (auto& t : doc["runs"][0]["tokens"]) {
        t.erase("split");
        t.erase("reasoning");
        t.erase("answer_text");
    }
    doc["runs"][0].erase("reasoning_tokens");
    doc["runs"][0].erase("reasoning_ns");
    const ConversationRecord old = conversation_from_json(doc);
    for (const TokenEvent& t : old.runs.at(0).tokens) EXPECT_FALSE(t.split);
    EXPECT_EQ(old.runs[0].reasoning_tokens, 0);
}

}  // namespace
}  // namespace fluoro::app
