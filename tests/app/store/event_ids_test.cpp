// A second engine's events numbered apart: runs and conversations move above the base (zero, no
// run, stays zero), a shared snapshot is copied rather than changed, and the rest is untouched.
#include "store/event_ids.h"

#include <gtest/gtest.h>

namespace fluoro::app {
namespace {

TEST(EventIds, RunsAndConversationsMoveAboveTheBase) {
    constexpr uint64_t base = 1000;
    RunStarted rs;
    rs.run = 3;
    rs.conversation = 3;
    rs.user_text = "hi";
    const auto moved = std::get<RunStarted>(with_id_base(rs, base));
    EXPECT_EQ(moved.run, 1003u);
    EXPECT_EQ(moved.conversation, 1003u);
    EXPECT_EQ(moved.user_text, "hi");
    ConversationStarted cs;
    cs.conversation = 4;
    EXPECT_EQ(std::get<ConversationStarted>(with_id_base(cs, base)).conversation, 1004u);
    TokenEvent t;
    t.run = 3;
    t.index = 7;
    EXPECT_EQ(std::get<TokenEvent>(with_id_base(t, base)).run, 1003u);
    EXPECT_EQ(std::get<TokenEvent>(with_id_base(t, base)).index, 7);
    ErrorEvent engine_level{0, "send", "x", 0, 5};
    EXPECT_EQ(std::get<ErrorEvent>(with_id_base(engine_level, base)).run, 0u);
    auto kv = std::make_shared<KvSnapshot>();
    kv->run = 2;
    const std::shared_ptr<const KvSnapshot> original = kv;
    const auto copy =
        std::get<std::shared_ptr<const KvSnapshot>>(with_id_base(Event(original), base));
    EXPECT_EQ(copy->run, 1002u);
    EXPECT_EQ(original->run, 2u);  // the shared one is untouched
}

}  // namespace
}  // namespace fluoro::app
