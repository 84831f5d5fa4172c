// A remote server's run in the store (schema v11): its tokens keep their alternatives' texts
// (the ids name no vocabulary) and its server loads are rows of their own, read back as recorded;
// a local run's tokens keep no texts (the vocabulary names them). A version 10 file is migrated
// with its runs kept. A token whose texts do not match its alternatives is a corrupt file, said so.
#include <gtest/gtest.h>

#include "core/error.h"
#include "store/schema.h"
#include "store/store.h"
#include "store_test_util.h"

namespace fluoro::app {
namespace {

std::vector<Event> remote_run(uint64_t run, uint64_t conversation) {
    std::vector<Event> ev =
        test::synthetic_run(run, conversation, RunKind::Send, 0, "hi", {"a", "b"}, false);
    std::get<RunStarted>(ev[0]).backend = "remote";
    for (Event& e : ev)
        if (auto* t = std::get_if<TokenEvent>(&e)) t->top_text = {"A", "\xE4"};  // half a char
    ServerLoadEvent before;
    before.run = run;
    before.names = "vllm";
    before.running = 0;
    before.prompt_tokens = 100;
    before.t_ns = 10;
    ServerLoadEvent after = before;
    after.running = 1;
    after.prompt_tokens = 109;
    after.kv_usage = 0.25;
    after.t_ns = 5000;
    ev.push_back(before);
    ev.push_back(after);
    RunFinished f;
    f.run = run;
    f.stop = "eog";
    f.text = "ab";
    f.n_tokens = 2;
    ev.push_back(f);
    return ev;
}

TEST(RemoteStore, AlternativesTextsAndServerLoadsAreKept) {
    const auto path = test::temp_db("remote_run");
    const int64_t local =
        test::record_events(path, test::synthetic_run(1, 1, RunKind::Send, 0, "x", {"p", "q"}));
    const int64_t remote = test::record_events(path, remote_run(2, 2));
    Store store(path);
    const RunRecord r = store.load_run(remote);
    ASSERT_EQ(r.tokens.size(), 2u);
    EXPECT_EQ(r.tokens[1].top_text, (std::vector<std::string>{"A", "\xE4"}));
    ASSERT_EQ(r.server_loads.size(), 2u);
    EXPECT_EQ(r.server_loads[0].names, "vllm");
    EXPECT_EQ(r.server_loads[0].t_ns, 10);
    EXPECT_EQ(r.server_loads[1].prompt_tokens, 109.0);
    EXPECT_EQ(r.server_loads[1].kv_usage, 0.25);
    EXPECT_EQ(r.server_loads[1].prefix_hits, -1.0);  // not exposed: kept as unknown
    const RunRecord l = store.load_run(local);
    ASSERT_EQ(l.tokens.size(), 2u);
    EXPECT_TRUE(l.tokens[0].top_text.empty());
    EXPECT_TRUE(l.server_loads.empty());
}

TEST(RemoteStore, AVersion10FileIsMigratedWithItsRunsKept) {
    const auto path = test::temp_db("v10_to_v11");
    const int64_t old =
        test::record_events(path, test::synthetic_run(1, 1, RunKind::Send, 0, "hi", {"a", "b"}));
    {
        Database raw(path, SQLITE_OPEN_READWRITE);
        raw.exec(std::string(test::kBackToV10) + "PRAGMA user_version = 10");
    }
    {
        Store store(path);
        EXPECT_EQ(store.db().query_int("PRAGMA user_version"), kSchemaVersion);
        const RunRecord r = store.load_run(old);
        ASSERT_EQ(r.tokens.size(), 2u);
        EXPECT_EQ(r.tokens[0].top.size(), 2u);
        EXPECT_TRUE(r.tokens[0].top_text.empty());
    }
    const int64_t remote = test::record_events(path, remote_run(2, 2));
    Store store(path);
    EXPECT_EQ(store.load_run(remote).server_loads.size(), 2u);
}

TEST(RemoteStore, TextsThatDoNotMatchTheAlternativesAreACorruptFile) {
    const auto path = test::temp_db("remote_corrupt");
    const int64_t id = test::record_events(path, remote_run(1, 1));
    {
        Database raw(path, SQLITE_OPEN_READWRITE);
        // One text (length-prefixed "A") for two alternatives.
        raw.exec("UPDATE tokens SET top_text = x'0100000041' WHERE idx = 0");
    }
    Store store(path);
    try {
        (void)store.load_run(id);
        ADD_FAILURE() << "a mismatched row was read";
    } catch (const StoreError& e) {
        EXPECT_NE(std::string(e.what()).find("2 alternatives but 1 texts"), std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace fluoro::app
