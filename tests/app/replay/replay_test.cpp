// Replay: a stored run comes back on an EventStream as the same events the engine emitted live —
// same tokens, steps and snapshots in the same order — framed by RunStarted and RunFinished.
#include "replay/replay.h"

#include <gtest/gtest.h>

#include "../store/store_test_util.h"
#include "store/store_writer.h"

namespace fluoro::app {
namespace {

TEST(Replay, AStoredRunStreamsBackAsTheLiveEvents) {
    const auto path = test::temp_db("replay");
    const auto live = test::synthetic_run(1, 1, RunKind::Send, 0, "q", {"a", "b", "c"});
    {
        StoreWriter w(path);
        for (const auto& e : live) w.record(e);
    }
    Store store(path);
    const ConversationRecord c = store.load_conversation(1);
    const auto events = run_events(c, c.runs.at(0));
    EventStream stream;
    EXPECT_EQ(replay(events, stream, {0.0, nullptr}), events.size());
    const auto got = stream.drain();
    ASSERT_EQ(got.size(), events.size());
    const auto& start = std::get<RunStarted>(got.front());
    EXPECT_EQ(start.user_text, "q");
    EXPECT_EQ(start.kept_messages, 0);
    EXPECT_EQ(start.prompt_tokens, 9);
    const auto& fin = std::get<RunFinished>(got.back());
    EXPECT_EQ(fin.text, "abc");
    EXPECT_EQ(fin.stop, "eog");

    // The live tokens and steps, in the live order.
    std::vector<std::string> live_order, replay_order;
    const auto describe = [](const Event& e) -> std::string {
        if (const auto* t = std::get_if<TokenEvent>(&e))
            return "token " + std::to_string(t->index) + " " + t->piece + " " +
                   std::to_string(t->t_ns) + " " + std::to_string(t->top.size());
        if (const auto* s = std::get_if<StepEvent>(&e))
            return "step " + std::to_string(s->index) + " " + std::to_string(s->end_ns) + " " +
                   std::to_string(s->op_ns[0]);
        return {};
    };
    for (const auto& e : live)
        if (auto d = describe(e); !d.empty()) live_order.push_back(d);
    for (const auto& e : got)
        if (auto d = describe(e); !d.empty()) replay_order.push_back(d);
    EXPECT_EQ(replay_order, live_order);
    for (const auto& e : got) EXPECT_EQ(event_run(e), uint64_t(c.runs[0].id));
}

// The v3 fields come back: RunStarted carries the prompt's ids and pieces, RunFinished the
// speculative totals, the spec step its bonus and timings, the snapshot its key_begin, and the
// attention stats (recorded out of time order) arrive in time order among the other events.
TEST(Replay, AttentionStatsAndTheV3FieldsComeBackInTimeOrder) {
    const auto path = test::temp_db("replay_v3");
    {
        StoreWriter w(path);
        for (const auto& e : test::v3_run(1, 1)) w.record(e);
    }
    Store store(path);
    const ConversationRecord c = store.load_conversation(1);
    const auto events = run_events(c, c.runs.at(0));
    const auto& start = std::get<RunStarted>(events.front());
    EXPECT_EQ(start.prompt_ids, (std::vector<int32_t>{1, 529, 9999, 13}));
    ASSERT_EQ(start.prompt_pieces.size(), 4u);
    EXPECT_EQ(start.prompt_pieces[2], std::string("\xE4"));
    const auto& fin = std::get<RunFinished>(events.back());
    EXPECT_EQ(fin.drafted_tokens, 7);
    EXPECT_EQ(fin.accepted_tokens, 5);

    std::vector<int64_t> stats_steps, times;
    int64_t last_t = -1;
    for (size_t i = 1; i + 1 < events.size(); ++i) {
        const Event& e = events[i];
        EXPECT_EQ(event_run(e), uint64_t(c.runs[0].id));
        int64_t t = 0;
        if (const auto* st = std::get_if<AttentionStats>(&e)) {
            stats_steps.push_back(st->step);
            EXPECT_EQ(st->heads.size(), 6u);
            t = st->t_ns;
        } else if (const auto* sp = std::get_if<SpecStep>(&e)) {
            EXPECT_EQ(sp->bonus, 24);
            EXPECT_EQ(sp->draft_ns, 150);
            EXPECT_EQ(sp->verify_ns, 600);
            t = sp->t_ns;
        } else if (const auto* at = std::get_if<std::shared_ptr<const AttentionSnapshot>>(&e)) {
            EXPECT_EQ((*at)->key_begin, 8);
            t = (*at)->t_ns;
        } else if (const auto* tok = std::get_if<TokenEvent>(&e)) {
            t = tok->t_ns;
        } else if (const auto* s = std::get_if<StepEvent>(&e)) {
            t = s->end_ns;
        } else {
            continue;
        }
        EXPECT_GE(t, last_t) << "event " << i;
        last_t = t;
    }
    EXPECT_EQ(stats_steps, (std::vector<int64_t>{1, 2}));

    // Through the stream too.
    EventStream stream;
    EXPECT_EQ(replay(events, stream, {0.0, nullptr}), events.size());
    size_t n_stats = 0;
    for (const auto& e : stream.drain()) n_stats += std::holds_alternative<AttentionStats>(e);
    EXPECT_EQ(n_stats, 2u);
}

// What the workbench hands NewConversation to continue a stored conversation from one of its
// runs: that run's branch through its reply, not the other branches.
TEST(Replay, RunHistoryIsTheRunsBranchThroughItsReply) {
    const auto path = test::temp_db("replay_history");
    {
        StoreWriter w(path);
        for (const auto& run : {test::synthetic_run(1, 1, RunKind::Send, 0, "one", {"a"}),
                                test::synthetic_run(2, 1, RunKind::Send, 2, "two", {"b"}),
                                test::synthetic_run(3, 1, RunKind::Regenerate, 3, "", {"c"}),
                                test::synthetic_run(4, 1, RunKind::Edit, 0, "uno", {"d"})})
            for (const auto& e : run) w.record(e);
    }
    Store store(path);
    const ConversationRecord c = store.load_conversation(1);
    ASSERT_EQ(c.runs.size(), 4u);
    const auto text_of = [](const std::vector<ChatMessage>& h) {
        std::string s;
        for (const auto& m : h) s += m.role.substr(0, 1) + ":" + m.content + " ";
        return s;
    };
    EXPECT_EQ(text_of(run_history(c, c.runs[0])), "u:one a:a ");
    EXPECT_EQ(text_of(run_history(c, c.runs[1])), "u:one a:a u:two a:b ");
    EXPECT_EQ(text_of(run_history(c, c.runs[2])), "u:one a:a u:two a:c ");
    EXPECT_EQ(text_of(run_history(c, c.runs[3])), "u:uno a:d ");
    RunRecord missing;
    missing.message_id = 999;
    EXPECT_TRUE(run_history(c, missing).empty());
}

TEST(Replay, CancelStopsIt) {
    std::vector<Event> events;
    for (int64_t i = 0; i < 5; ++i)
        events.push_back(TokenEvent{1, i, 0, "x", 0, {}, i * 1000000000});
    std::atomic<bool> cancel{true};
    EventStream stream;
    EXPECT_EQ(replay(events, stream, {1.0, &cancel}), 0u);
}

}  // namespace
}  // namespace fluoro::app
