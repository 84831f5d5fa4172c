// The BatchEngine (runtime/batch_engine.h) answers concurrent completions exactly as the Engine
// answers each alone: on SmolLM2, six threads' greedy chat requests over four slots get the
// Engine's replies token for token and with the same log-probabilities (exact: the batch is
// computed by batch-invariant kernels, decode/batch_decoder.h), their events are those of a run
// (RunStarted, PrefixCacheEvent, TokenEvents adding up to the reply, RunFinished), a request
// cancelled while it waits or runs ends "cancelled" and the others are unaffected, and what cannot
// run is refused with a message.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "engine/runtime/engine_test_events.h"
#include "runtime/batch_engine.h"
#include "runtime/engine.h"
#include "test_models.h"

namespace fluoro {
namespace {

ModelSettings settings() {
    ModelSettings ms;
    ms.threads = 2;
    ms.ctx = 1024;
    ms.prefix_cache_slots = 4;
    return ms;
}

SamplingParams greedy() {
    SamplingParams p;
    p.temperature = 0;
    p.n_probs = 3;
    return p;
}

struct Reply {
    RunFinished fin;
    std::string streamed;
    std::vector<float> logprobs;
    bool started = false, prefix_event = false;
};

Reply collect(const std::vector<Event>& events) {
    Reply r;
    for (const Event& e : events) {
        if (std::holds_alternative<RunStarted>(e)) r.started = true;
        if (std::holds_alternative<PrefixCacheEvent>(e)) r.prefix_event = true;
        if (const auto* t = std::get_if<TokenEvent>(&e)) {
            r.streamed += t->piece;
            if (t->id >= 0) r.logprobs.push_back(t->logprob);
        }
        if (const auto* f = std::get_if<RunFinished>(&e)) r.fin = *f;
    }
    return r;
}

std::vector<Complete> requests() {
    const char* questions[] = {"Name three fruits.",        "What is the capital of Italy?",
                               "Write a haiku about rain.", "Count from one to five.",
                               "Say hello in French.",      "What colour is the sky?"};
    std::vector<Complete> out;
    for (const char* q : questions) {
        Complete c{{{"system", "You are a helpful assistant."}, {"user", q}}};
        c.sampling = greedy();
        c.max_tokens = 24;
        out.push_back(std::move(c));
    }
    return out;
}

TEST(BatchEngine, ConcurrentRequestsGetTheEnginesSoloReplies) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    const std::vector<Complete> reqs = requests();
    std::vector<Reply> alone;
    {
        Engine engine;
        engine.submit_blocking(LoadModel{path, settings()});
        for (const Complete& c : reqs) {
            engine.submit(c);
            alone.push_back(collect(test::next_run(engine)));
        }
    }
    BatchEngineOptions o;
    o.parallel = 4;
    o.prefill_chunk = 32;  // prompts of ~30 tokens: chunks beside the others' decodes
    std::atomic<int64_t> max_running{0};  // before the engine: its thread writes it
    BatchEngine batch(path, settings(), o);
    batch.set_step_observer([&](const BatchStep&, const BatchLoad& l) {
        int64_t m = max_running.load();
        while (l.running > m && !max_running.compare_exchange_weak(m, l.running)) {
        }
    });
    std::vector<Reply> got(reqs.size());
    std::vector<std::thread> clients;
    for (size_t i = 0; i < reqs.size(); ++i)
        clients.emplace_back([&, i] {
            std::vector<Event> events;
            batch.run(reqs[i], [&](const Event& e) { events.push_back(e); });
            got[i] = collect(events);
        });
    for (auto& t : clients) t.join();
    EXPECT_GE(max_running.load(), 2);  // they did run together
    for (size_t i = 0; i < reqs.size(); ++i) {
        SCOPED_TRACE("request " + std::to_string(i));
        EXPECT_TRUE(got[i].started);
        EXPECT_TRUE(got[i].prefix_event);
        EXPECT_EQ(got[i].fin.stop, alone[i].fin.stop);
        EXPECT_EQ(got[i].fin.text, alone[i].fin.text);
        EXPECT_EQ(got[i].streamed, got[i].fin.text);
        EXPECT_EQ(got[i].fin.n_tokens, alone[i].fin.n_tokens);
        EXPECT_EQ(got[i].fin.prompt_tokens, alone[i].fin.prompt_tokens);
        EXPECT_EQ(got[i].logprobs, alone[i].logprobs);  // float ==: bit equality but for -0/NaN
    }
    // The shared system prompt: later requests took it from the prefix cache.
    int64_t cached = 0;
    for (const Reply& r : got) cached += r.fin.cached_tokens;
    EXPECT_GT(cached, 0);
}

TEST(BatchEngine, CancelledRequestsEndAndTheOthersFinish) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    BatchEngineOptions o;
    o.parallel = 1;  // the second request waits behind the first
    BatchEngine batch(path, settings(), o);
    Complete long_one{{{"user", "Tell me a long story about a dragon."}}};
    long_one.sampling = greedy();
    long_one.max_tokens = 400;
    std::atomic<bool> cancel_running{false}, cancel_waiting{false}, a_started{false};
    RunFinished first, second;
    int64_t tokens_first = 0;
    const auto guard = std::chrono::steady_clock::now() + std::chrono::seconds(120);  // hang guard
    std::thread a([&] {
        first = batch.run(
            long_one,
            [&](const Event& e) {
                if (std::holds_alternative<RunStarted>(e)) a_started = true;
                if (std::holds_alternative<TokenEvent>(e) && ++tokens_first == 3) {
                    // Once the second request waits behind this one: it leaves the queue, and
                    // this one stops at the engine's next step.
                    while (batch.load().waiting == 0 && std::chrono::steady_clock::now() < guard)
                        std::this_thread::sleep_for(std::chrono::milliseconds(1));
                    cancel_waiting = true;
                    cancel_running = true;
                }
            },
            &cancel_running);
    });
    // Queued behind `a` (one slot): it must leave without ever running.
    while (!a_started && std::chrono::steady_clock::now() < guard)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(a_started.load());
    bool second_ran = false;
    second = batch.run(
        long_one, [&](const Event& e) { second_ran |= std::holds_alternative<RunStarted>(e); },
        &cancel_waiting);
    a.join();
    EXPECT_EQ(first.stop, "cancelled");
    EXPECT_GE(tokens_first, 3);
    EXPECT_LT(first.n_tokens, 400);
    EXPECT_EQ(second.stop, "cancelled");
    EXPECT_FALSE(second_ran);
    // The engine goes on serving.
    Complete short_one{{{"user", "Hi"}}};
    short_one.max_tokens = 3;
    const RunFinished third = batch.run(short_one, [](const Event&) {});
    EXPECT_EQ(third.stop, "max_tokens");
    EXPECT_EQ(third.n_tokens, 3);
}

TEST(BatchEngine, RefusesWhatItCannotRun) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    BatchEngineOptions o;
    o.parallel = 2;
    BatchEngine batch(path, settings(), o);
    const RunFinished bad =
        batch.run(Complete{{{"assistant", "no question"}}}, [](const Event&) {});
    EXPECT_EQ(bad.stop, "error");
    EXPECT_NE(bad.error.find("end with a user message"), std::string::npos) << bad.error;
    std::string huge;
    for (int i = 0; i < 1500; ++i) huge += "word ";
    const RunFinished over = batch.run(Complete{{{"user", huge}}}, [](const Event&) {});
    EXPECT_EQ(over.stop, "error");
    EXPECT_GT(over.overflow_prompt_tokens, 1024);
    EXPECT_EQ(over.overflow_context_tokens, 1024);
    o.parallel = 0;
    EXPECT_THROW(BatchEngine(path, settings(), o), Error);
    o.parallel = 2;
    o.prefill_chunk = 0;
    EXPECT_THROW(BatchEngine(path, settings(), o), Error);
}

}  // namespace
}  // namespace fluoro
