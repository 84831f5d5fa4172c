// Multi-turn chat through the Engine on the real SmolLM2: later turns reuse the KV of earlier ones
// (no re-prefill of the history), generation is reproducible from a seed, bad input gives a clear
// error with the conversation unchanged and still usable, and a cancel stops within one step.
// (These were ChatSession's tests; the Engine is now the one place that holds a conversation.)
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "engine/runtime/engine_test_events.h"
#include "runtime/engine.h"
#include "test_models.h"

namespace fluoro {
namespace {

using namespace std::chrono_literals;
using test::all_of;
using test::next_run;

SamplingParams greedy() {
    SamplingParams p;
    p.temperature = 0;
    return p;
}

// An Engine with SmolLM2 loaded (2048 tokens of context, 2 threads), at level Full: the memory
// counters and KV snapshots say how many tokens the conversation holds in the cache.
struct Chat {
    explicit Chat(const std::filesystem::path& model, SamplingParams p = greedy(),
                  int64_t max_tokens = 24)
        : engine({TelemetryLevel::Full}) {
        ModelSettings ms;
        ms.threads = 2;
        ms.ctx = 2048;
        engine.submit(ChangeSettings{p, max_tokens, std::nullopt});
        engine.submit_blocking(LoadModel{model, ms});
    }
    std::vector<Event> send(const std::string& text) {
        engine.submit(SendMessage{text});
        return next_run(engine);
    }
    // The messages the conversation holds: the history a new turn keeps (a one-token turn).
    int64_t messages() {
        engine.submit(ChangeSettings{std::nullopt, 1, std::nullopt});
        return all_of<RunStarted>(send("One more thing.")).at(0).kept_messages;
    }
    Engine engine;
};

RunFinished finished(const std::vector<Event>& run) {
    return std::get<RunFinished>(run.back());
}

// Tokens in the conversation's KV when the run ended (what Sequence::tokens() holds).
int64_t cached_tokens_after(const std::vector<Event>& run) {
    const auto mem = all_of<MemoryCounters>(run);
    const auto kv = all_of<std::shared_ptr<const KvSnapshot>>(run);
    if (mem.empty() || kv.empty() || kv[0]->bytes_per_token == 0) return -1;
    return mem.back().kv_used_bytes / kv[0]->bytes_per_token;
}

TEST(EngineChat, SecondTurnReusesTheFirstTurnsKv) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    Chat c(path);
    const auto run1 = c.send("What is the capital of France?");
    const RunFinished t1 = finished(run1);
    EXPECT_EQ(t1.cached_tokens, 0);
    EXPECT_GT(t1.n_tokens, 0);
    const int64_t cached_after_t1 = cached_tokens_after(run1);
    ASSERT_GT(cached_after_t1, 0);
    const RunFinished t2 = finished(c.send("And of Italy?"));
    std::printf(
        "[ chat ] turn 1: %lld prompt tokens; turn 2: %lld prompt tokens, %lld reused, %lld "
        "computed\n",
        static_cast<long long>(t1.prompt_tokens), static_cast<long long>(t2.prompt_tokens),
        static_cast<long long>(t2.cached_tokens), static_cast<long long>(t2.computed_tokens));
    // Everything turn 1 left in the cache (its prompt and answer) is reused, or all but the few
    // answer tokens whose re-tokenized text differs from the sampled ids.
    EXPECT_GE(t2.cached_tokens, t1.prompt_tokens);
    EXPECT_GE(t2.cached_tokens, cached_after_t1 - 4);
    EXPECT_LT(t2.computed_tokens, 24);
    EXPECT_EQ(c.messages(), 4);
}

TEST(EngineChat, SameSeedSameText) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    SamplingParams p;
    p.temperature = 0.9f;
    p.seed = 1234;
    Chat a(path, p, 20), b(path, p, 20);
    const std::string ta = finished(a.send("Tell me a story.")).text;
    const std::string tb = finished(b.send("Tell me a story.")).text;
    EXPECT_EQ(ta, tb);
    p.seed = 99;
    Chat c(path, p, 20);
    EXPECT_NE(finished(c.send("Tell me a story.")).text, ta);  // 20 tokens at T=0.9: differs
}

TEST(EngineChat, BadInputIsAClearErrorAndTheConversationContinues) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    Chat c(path, greedy(), 4);
    const RunFinished bad = finished(c.send(std::string("bad \xff utf-8")));
    EXPECT_EQ(bad.stop, "error");
    EXPECT_NE(bad.error.find("UTF-8"), std::string::npos) << bad.error;
    const auto hello = c.send("Hello!");
    EXPECT_EQ(all_of<RunStarted>(hello).at(0).kept_messages, 0);  // the failed turn left no trace
    EXPECT_NE(finished(hello).stop, "error");
    EXPECT_EQ(c.messages(), 2);
}

TEST(EngineChat, CancelStopsWithinAStep) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    Chat c(path, greedy(), 100);
    c.engine.submit(SendMessage{"Count to one hundred."});
    // The cancel comes from this thread while the engine goes on: a step it had begun may still
    // deliver its token (decode/generate_test.cpp checks the exact stop of generate()).
    int64_t seen = 0, after_cancel = 0, ordinal = 0, cancel_at = -1;
    std::optional<RunFinished> fin;
    const auto deadline = std::chrono::steady_clock::now() + 120s;  // hang guard, not a bound
    while (!fin && std::chrono::steady_clock::now() < deadline) {
        auto ev = c.engine.events().pop(100ms);
        if (!ev) continue;
        ++ordinal;
        if (const auto* t = std::get_if<TokenEvent>(&*ev); t && t->id >= 0) {
            if (++seen == 3) {
                c.engine.cancel();
                cancel_at = int64_t(c.engine.events().stats().pushed);
            } else if (cancel_at >= 0 && ordinal > cancel_at) {
                ++after_cancel;
            }
        }
        if (const auto* f = std::get_if<RunFinished>(&*ev)) fin = *f;
    }
    ASSERT_TRUE(fin.has_value());
    EXPECT_EQ(fin->stop, "cancelled");
    EXPECT_LE(after_cancel, 1);
    EXPECT_EQ(fin->n_tokens, seen);  // every token the run counts was streamed
}

}  // namespace
}  // namespace fluoro
