// EngineRelay: completions on an engine whose events another thread drains (the workbench's
// case). A drainer thread plays the GUI: it takes every batch and hands it to deliver(). Checked:
// the relay passes on exactly its own run's events even when a chat run was queued ahead of it,
// a command that fails before its run is reported with the engine's message, abort() frees a
// waiting request although nothing is delivered, abort() and cancel() leave other runs alone, and
// the HTTP server works over it end to end.
#include "server/engine_relay.h"

#include <httplib.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "runtime/engine.h"
#include "server_test_model.h"

namespace fluoro::app {
namespace {

using namespace std::chrono_literals;

// An engine and a thread that drains its events into the relay, as the EngineBridge does. While
// `paused`, batches are drained and dropped (what a relay without a listener would see).
struct Drained {
    Engine engine{EngineOptions{TelemetryLevel::Summary}};
    EngineRelay relay{engine};
    std::atomic<bool> quit{false}, paused{false};
    std::mutex mu;
    std::vector<Event> seen;  // every event the drainer took, in order
    std::thread drainer;

    explicit Drained(bool load = true) {
        if (load) {
            LoadModel l{test_support::server_tiny_model(), {}};
            l.settings.threads = 1;
            l.settings.ctx = 4096;
            engine.submit_blocking(l);
        }
        drainer = std::thread([this] {
            while (!quit.load()) {
                std::vector<Event> batch = engine.events().drain();
                if (batch.empty()) {
                    std::this_thread::sleep_for(2ms);
                    continue;
                }
                {
                    std::lock_guard<std::mutex> lock(mu);
                    seen.insert(seen.end(), batch.begin(), batch.end());
                }
                if (!paused.load()) relay.deliver(batch);
            }
        });
    }
    ~Drained() {
        quit.store(true);
        drainer.join();
    }
    std::vector<Event> all() {
        std::lock_guard<std::mutex> lock(mu);
        return seen;
    }
};

Complete completion(const std::string& user, int64_t max_tokens) {
    Complete c;
    c.messages = {{"system", "You answer briefly."}, {"user", user}};
    c.max_tokens = max_tokens;
    SamplingParams sp;
    sp.temperature = 0;
    c.sampling = sp;
    return c;
}

// A chat turn of the window's own, submitted straight to the engine; returns its submission.
uint64_t submit_chat(Drained& d, int64_t max_tokens, const std::string& text) {
    ChangeSettings cs;
    cs.max_tokens = max_tokens;
    d.engine.submit(cs);
    return d.engine.submit(SendMessage{text});
}

TEST(EngineRelay, PassesOnItsOwnRunOnlyWhenAChatRunIsQueuedAhead) {
    Drained d;
    const uint64_t chat = submit_chat(d, 24, "a chat message queued before the request");
    std::vector<Event> got;
    const RunFinished f =
        d.relay.run(completion("the request", 9), [&](const Event& e) { got.push_back(e); });
    ASSERT_NE(f.stop, "error") << f.error;
    EXPECT_GT(f.n_tokens, 0);

    // The chat's run came first and was not passed on.
    const std::vector<Event> all = d.all();
    uint64_t chat_run = 0, own_run = 0;
    for (const Event& e : all)
        if (const auto* rs = std::get_if<RunStarted>(&e))
            (rs->submission == chat ? chat_run : own_run) = rs->run;
    ASSERT_NE(chat_run, 0u);
    ASSERT_NE(own_run, 0u);
    EXPECT_LT(chat_run, own_run);

    ASSERT_FALSE(got.empty());
    ASSERT_TRUE(std::holds_alternative<RunStarted>(got.front()));
    EXPECT_EQ(std::get<RunStarted>(got.front()).user_text, "the request");
    ASSERT_TRUE(std::holds_alternative<RunFinished>(got.back()));
    int64_t tokens = 0;
    for (const Event& e : got) {
        EXPECT_EQ(event_run(e), own_run);
        if (const auto* t = std::get_if<TokenEvent>(&e); t && t->id >= 0) ++tokens;
    }
    EXPECT_EQ(tokens, f.n_tokens);
    EXPECT_EQ(std::get<RunFinished>(got.back()).text, f.text);
}

TEST(EngineRelay, AFailureBeforeTheRunIsTheEnginesMessage) {
    Drained d(false);  // no model
    bool called = false;
    const RunFinished f = d.relay.run(completion("hello", 4), [&](const Event&) { called = true; });
    EXPECT_EQ(f.stop, "error");
    EXPECT_NE(f.error.find("no model is loaded"), std::string::npos) << f.error;
    EXPECT_FALSE(called);
}

TEST(EngineRelay, AbortFreesAWaitingRequestAndLaterOnesReturnAtOnce) {
    Drained d;
    d.paused.store(true);  // the GUI thread is busy: nothing is delivered
    auto waiting = std::async(std::launch::async, [&] {
        return d.relay.run(completion("never delivered", 200), [](const Event&) {});
    });
    EXPECT_EQ(waiting.wait_for(300ms), std::future_status::timeout);
    d.relay.abort();
    ASSERT_EQ(waiting.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(waiting.get().stop, "cancelled");
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(d.relay.run(completion("after", 4), [](const Event&) {}).stop, "cancelled");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
}

// Stopping the server (abort) or a client going away (cancel) with no request of the relay's
// running must not cancel the engine's other work: the window's own chat generation.
TEST(EngineRelay, AbortAndCancelLeaveOtherRunsAlone) {
    Drained d;
    const uint64_t chat = submit_chat(d, 200, "the window's own chat");
    d.relay.cancel();
    d.relay.abort();
    RunFinished f;
    for (int i = 0; i < 1200 && f.stop.empty(); ++i) {
        std::this_thread::sleep_for(10ms);
        uint64_t run = 0;
        for (const Event& e : d.all()) {
            if (const auto* rs = std::get_if<RunStarted>(&e); rs && rs->submission == chat)
                run = rs->run;
            if (const auto* fin = std::get_if<RunFinished>(&e); fin && run && fin->run == run)
                f = *fin;
        }
    }
    EXPECT_EQ(f.stop, "max_tokens");
    EXPECT_EQ(f.n_tokens, 200);
}

TEST(EngineRelay, ServesHttpRequestsOverARelayedEngine) {
    Drained d;
    ServerOptions so;
    so.model_id = "tiny.gguf";
    so.log = false;
    std::vector<RequestRecord> records;
    std::mutex mu;
    so.on_request = [&](const RequestRecord& r) {
        std::lock_guard<std::mutex> lock(mu);
        records.push_back(r);
    };
    OpenAiServer server(so, d.relay.backend());
    const int port = server.start("127.0.0.1", 0);
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(120, 0);
    const nlohmann::json body{{"messages", {{{"role", "user"}, {"content", "hello"}}}},
                              {"max_tokens", 6},
                              {"temperature", 0}};
    for (int i = 0; i < 2; ++i) {
        const auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
        ASSERT_TRUE(r) << httplib::to_string(r.error());
        ASSERT_EQ(r->status, 200) << r->body;
        const auto j = nlohmann::json::parse(r->body);
        EXPECT_GT(j["usage"]["completion_tokens"].get<int64_t>(), 0);
    }
    server.stop();
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(records.size(), 2u);
    for (const RequestRecord& r : records) {
        EXPECT_EQ(r.status, 200);
        EXPECT_TRUE(r.ran);
        EXPECT_EQ(r.path, "/v1/chat/completions");
        EXPECT_EQ(r.remote, "127.0.0.1");
        EXPECT_GT(r.prompt, 0);
    }
    // The same prompt again: all but the last prompt token came from the cache.
    EXPECT_EQ(records[1].cached, records[1].prompt - 1);
}

}  // namespace
}  // namespace fluoro::app
