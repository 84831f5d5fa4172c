// ConversationMirror: one engine conversation's turns rebuilt from its events, as the engine
// holds them — sends, a regenerate, an edit, a failed run, and other conversations' runs ignored.
#include "session/conversation_mirror.h"

#include <gtest/gtest.h>

#include "../store/store_test_util.h"

namespace fluoro::app {
namespace {

using test::run_started;

RunFinished finished(uint64_t run, std::string text, std::string stop = "eog") {
    RunFinished f;
    f.run = run;
    f.text = std::move(text);
    f.stop = std::move(stop);
    return f;
}

std::string joined(const ConversationMirror& m) {
    std::string s;
    for (const ChatMessage& t : m.turns()) s += t.role.substr(0, 1) + ":" + t.content + " ";
    return s;
}

TEST(ConversationMirror, FollowsTheEnginesTurns) {
    ConversationMirror m;
    EXPECT_FALSE(m.following());
    m.start(ConversationStarted{5, "be brief", {{"user", "q0"}, {"assistant", "a0"}}, 1});
    EXPECT_TRUE(m.following());
    EXPECT_EQ(m.conversation(), 5u);
    EXPECT_EQ(m.system_prompt(), "be brief");
    m.apply(run_started(1, 5, RunKind::Send, 2, "q1"));
    EXPECT_EQ(joined(m), "u:q0 a:a0 ") << "a run changes the turns when it ends";
    m.apply(finished(1, "a1"));
    EXPECT_EQ(joined(m), "u:q0 a:a0 u:q1 a:a1 ");
    m.apply(run_started(2, 5, RunKind::Regenerate, 3, ""));
    m.apply(finished(2, "a1'", "max_tokens"));
    EXPECT_EQ(joined(m), "u:q0 a:a0 u:q1 a:a1' ");
    m.apply(run_started(3, 5, RunKind::Edit, 0, "q0 edited"));
    m.apply(finished(3, "", "error"));
    EXPECT_EQ(joined(m), "u:q0 a:a0 u:q1 a:a1' ") << "a failed run leaves them as they were";
    m.apply(run_started(4, 9, RunKind::Send, 0, "someone else's"));
    m.apply(finished(4, "not ours"));
    EXPECT_EQ(joined(m), "u:q0 a:a0 u:q1 a:a1' ");
    m.apply(run_started(5, 5, RunKind::Edit, 0, "q0 edited"));
    m.apply(finished(5, "b0", "cancelled"));
    EXPECT_EQ(joined(m), "u:q0 edited a:b0 ");
    m.start(ConversationStarted{6, "", {}, 2});
    EXPECT_EQ(joined(m), "");
    EXPECT_EQ(m.conversation(), 6u);
}

}  // namespace
}  // namespace fluoro::app
