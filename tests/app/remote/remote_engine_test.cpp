// The remote engine against an in-process OpenAI server (the one `fluoro serve` runs, over a
// BatchEngine on the small seeded model): a chat turn's events equal what the server's engine
// computed — the reply, every token's text and logprob and its alternatives' (JSON carries a
// float's value exactly, so equality is exact), the prompt tokens of its usage — with the
// server's /metrics before and after (its counters moved by this run's tokens); the history goes
// with the next turn; regenerate and edit; cancel closes the request and the server stops; an
// unreachable server, a lens request and a refused command are errors that name why. The events
// recorded into a store and exported as JSON keep the alternatives' texts and the server loads.
#include "remote/remote_engine.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "app/server/server_test_model.h"
#include "export/json_export.h"
#include "runtime/batch_engine.h"
#include "server/openai_server.h"
#include "store/event_recorder.h"
#include "store/store.h"
#include "test_temp.h"

namespace fluoro::app {
namespace {

using namespace std::chrono_literals;

// The server, and every event its engine produced for each request, in order of completion.
struct Served {
    std::mutex mu;
    std::vector<std::vector<Event>> runs;
    std::vector<Complete> requests;
    BatchEngine engine;
    OpenAiServer server;
    int port = 0;

    explicit Served(const std::filesystem::path& model = test_support::server_tiny_model())
        : engine(model, settings(), BatchEngineOptions{2, 64, {}, 512, {}}),
          server(options(engine.model()), backend()) {
        port = server.start("127.0.0.1", 0);
    }
    static ModelSettings settings() {
        ModelSettings s;
        s.threads = 1;
        s.ctx = 1024;
        return s;
    }
    static ServerOptions options(const ModelLoaded& m) {
        ServerOptions o;
        o.model_id = "tiny";
        o.model_info = m;
        o.log = false;
        return o;
    }
    CompletionBackend backend() {
        CompletionBackend b;
        b.run = [this](Complete c, const std::function<void(const Event&)>& on_event,
                       const std::atomic<bool>& cancel) {
            std::vector<Event> seen;
            const RunFinished f = engine.run(
                c,
                [&](const Event& e) {
                    seen.push_back(e);
                    on_event(e);
                },
                &cancel);
            std::lock_guard lock(mu);
            runs.push_back(std::move(seen));
            requests.push_back(std::move(c));
            return f;
        };
        b.parallel = 2;
        b.batch_load = [this] { return engine.load(); };
        return b;
    }
    std::vector<Event> last_run() {
        std::lock_guard lock(mu);
        return runs.empty() ? std::vector<Event>{} : runs.back();
    }
    Complete last_request() {
        std::lock_guard lock(mu);
        return requests.back();
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
};

template <class T>
std::vector<T> all_of(const std::vector<Event>& events) {
    std::vector<T> out;
    for (const Event& e : events)
        if (const auto* v = std::get_if<T>(&e)) out.push_back(*v);
    return out;
}

// Events of `remote` until (and with) the first that `done` accepts; fails after 60 s.
template <class Done>
std::vector<Event> events_until(RemoteEngine& remote, Done done) {
    std::vector<Event> out;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
        std::optional<Event> e = remote.events().pop(50ms);
        if (!e) continue;
        out.push_back(*e);
        if (done(*e)) return out;
    }
    ADD_FAILURE() << "no matching event within 60 s";
    return out;
}

std::vector<Event> until_finished(RemoteEngine& remote) {
    return events_until(remote,
                        [](const Event& e) { return std::holds_alternative<RunFinished>(e); });
}

ModelLoaded attached(RemoteEngine& remote) {
    const auto ev = events_until(remote, [](const Event& e) {
        return std::holds_alternative<ModelLoaded>(e) || std::holds_alternative<ErrorEvent>(e);
    });
    const auto* m = ev.empty() ? nullptr : std::get_if<ModelLoaded>(&ev.back());
    EXPECT_NE(m, nullptr) << (ev.empty() ? "nothing" : std::get<ErrorEvent>(ev.back()).message);
    return m ? *m : ModelLoaded{};
}

RemoteAttach attach_to(const std::string& url, const std::string& model = {}, bool metrics = true) {
    RemoteAttach a;
    a.url = url;
    a.model = model;
    a.api_key_env = "";
    a.scrape_metrics = metrics;
    return a;
}

ChangeSettings greedy(int64_t max_tokens, int32_t n_probs) {
    SamplingParams p;
    p.temperature = 0;
    p.n_probs = n_probs;
    return ChangeSettings{p, max_tokens, std::string("Answer briefly.")};
}

TEST(ServerLoadSummary, SaysWhatTheServerExposesAndWhatThisRunMoved) {
    ServerLoadEvent before, after;
    before.names = after.names = "vllm";
    before.running = 1, after.running = 0;
    before.waiting = after.waiting = 2;
    after.kv_usage = 0.0321;
    before.prefix_hits = 890, after.prefix_hits = 900;
    before.prefix_queries = 1188, after.prefix_queries = 1200;
    before.spec_draft_tokens = 70, after.spec_draft_tokens = 80;
    before.spec_accepted_tokens = 45, after.spec_accepted_tokens = 52;
    EXPECT_EQ(server_load_summary(after, &before),
              "server (vllm names): running 0 · waiting 2 · KV cache 3.2 % · prefix cache "
              "900/1200 tokens hit (this run +10/+12) · spec 52/80 accepted (this run +7/+10)");
    EXPECT_EQ(server_load_summary(after),
              "server (vllm names): running 0 · waiting 2 · KV cache 3.2 % · prefix cache "
              "900/1200 tokens hit · spec 52/80 accepted");
    ServerLoadEvent llama;
    llama.names = "llamacpp";
    llama.running = 1;
    EXPECT_EQ(server_load_summary(llama), "server (llamacpp names): running 1");
    EXPECT_EQ(server_load_summary(ServerLoadEvent{}), "server (no known names): nothing known");
}

TEST(RemoteEngine, AChatTurnIsTheServersRunSeenFromOutside) {
    Served served;
    RemoteEngine remote(attach_to(served.url()));
    const ModelLoaded m = attached(remote);
    EXPECT_EQ(m.name, "tiny");  // the first model /v1/models lists
    EXPECT_EQ(m.arch, "remote");
    EXPECT_EQ(m.path, served.url() + "/v1");

    remote.submit(greedy(12, 3));
    const uint64_t sub = remote.submit(SendMessage{"Hello there"});
    EXPECT_GT(sub, RemoteEngine::kIdBase);
    const std::vector<Event> ev = until_finished(remote);
    const std::vector<Event> server = served.last_run();

    const auto starts = all_of<RunStarted>(ev);
    ASSERT_EQ(starts.size(), 1u);
    EXPECT_GT(starts[0].run, RemoteEngine::kIdBase);
    EXPECT_EQ(starts[0].submission, sub);
    EXPECT_EQ(starts[0].backend, "remote");
    EXPECT_EQ(starts[0].system_prompt, "Answer briefly.");
    ASSERT_EQ(all_of<ConversationStarted>(ev).size(), 1u);

    const RunFinished f = all_of<RunFinished>(ev).at(0);
    const RunFinished sf = all_of<RunFinished>(server).at(0);
    ASSERT_EQ(f.stop, sf.stop == "max_tokens" ? "max_tokens" : "eog") << f.error;
    EXPECT_EQ(f.text, sf.text);
    EXPECT_EQ(f.n_tokens, sf.n_tokens);
    EXPECT_EQ(f.prompt_tokens, sf.prompt_tokens);
    EXPECT_EQ(f.cached_tokens, sf.cached_tokens);
    EXPECT_GT(f.ttft_ms, 0);

    // Token by token: the server's texts and logprobs, its top 3 alternatives by text; ids are
    // the attachment's numbering (one text, one id).
    const auto tokens = all_of<TokenEvent>(ev);
    const auto stokens = all_of<TokenEvent>(server);
    ASSERT_EQ(tokens.size(), stokens.size());
    std::string joined;
    for (size_t i = 0; i < tokens.size(); ++i) {
        const TokenEvent &t = tokens[i], &s = stokens[i];
        EXPECT_EQ(t.index, int64_t(i));
        EXPECT_EQ(t.token_text, s.token_text);
        EXPECT_EQ(t.logprob, s.logprob);
        // A token with no probabilities (the end's flushed text) has none here either.
        EXPECT_EQ(t.id < 0, s.id < 0);
        ASSERT_EQ(t.top.size(), s.id < 0 ? 0u : 3u);
        ASSERT_EQ(t.top_text.size(), t.top.size());
        for (size_t k = 0; k < t.top.size(); ++k) {
            EXPECT_EQ(t.top_text[k], s.top_text[k]);
            EXPECT_EQ(t.top[k].logprob, s.top[k].logprob);
            if (t.top_text[k] == t.token_text) {
                EXPECT_EQ(t.top[k].id, t.id);
            }
        }
        joined += t.piece;
        EXPECT_GE(t.t_ns, i ? tokens[i - 1].t_ns : 0);
    }
    EXPECT_EQ(joined, f.text);

    // Steps: the wait for the first chunk (the prompt's tokens), then one per later chunk, from
    // the previous chunk's arrival to its own, with the tokens it brought.
    const auto steps = all_of<StepEvent>(ev);
    ASSERT_GE(steps.size(), 2u);
    const StepEvent& prefill = steps.back();  // known once the usage arrived
    EXPECT_EQ(prefill.phase, StepPhase::Prefill);
    EXPECT_EQ(prefill.index, 0);
    EXPECT_EQ(prefill.tokens, f.prompt_tokens);
    EXPECT_EQ(prefill.end_ns, tokens[0].t_ns);
    int64_t counted = 0;
    for (const TokenEvent& t : tokens) counted += t.t_ns == tokens[0].t_ns;
    int64_t prev = prefill.end_ns;
    for (size_t i = 0; i + 1 < steps.size(); ++i) {
        EXPECT_EQ(steps[i].phase, StepPhase::Decode);
        EXPECT_EQ(steps[i].index, int64_t(i) + 1);
        EXPECT_EQ(steps[i].start_ns, prev);
        EXPECT_GT(steps[i].end_ns, prev);
        int64_t arrived = 0;
        for (const TokenEvent& t : tokens) arrived += t.t_ns == steps[i].end_ns;
        EXPECT_EQ(steps[i].tokens, arrived);
        counted += steps[i].tokens;
        prev = steps[i].end_ns;
    }
    EXPECT_EQ(counted, int64_t(tokens.size()));
    EXPECT_EQ(f.decode_steps, int64_t(steps.size()) - 1);

    // The server's /metrics before and after: its counters moved by exactly this run.
    const auto loads = all_of<ServerLoadEvent>(ev);
    ASSERT_EQ(loads.size(), 2u);
    EXPECT_EQ(loads[0].names, "vllm");
    EXPECT_EQ(loads[1].generation_tokens - loads[0].generation_tokens, double(f.n_tokens));
    EXPECT_EQ(loads[1].prompt_tokens - loads[0].prompt_tokens, double(f.prompt_tokens));
    EXPECT_EQ(loads[1].running, 0.0);
    EXPECT_GE(loads[1].kv_usage, 0.0);
    EXPECT_EQ(
        server_load_summary(loads[1], &loads[0]).rfind("server (vllm names): running 0 · ", 0), 0u)
        << server_load_summary(loads[1], &loads[0]);

    // The next turn carries the history; regenerate and edit replace the last reply.
    remote.submit(SendMessage{"And again?"});
    const RunFinished f2 = all_of<RunFinished>(until_finished(remote)).at(0);
    ASSERT_NE(f2.stop, "error") << f2.error;
    const Complete second = served.last_request();
    ASSERT_EQ(second.messages.size(), 4u);  // system, user, assistant, user
    EXPECT_EQ(second.messages[2].content, f.text);
    EXPECT_EQ(second.messages[3].content, "And again?");

    remote.submit(Regenerate{});
    const auto regen = until_finished(remote);
    EXPECT_EQ(all_of<RunStarted>(regen).at(0).kind, RunKind::Regenerate);
    EXPECT_EQ(all_of<RunFinished>(regen).at(0).text, f2.text);  // greedy: the same reply
    EXPECT_EQ(served.last_request().messages.size(), 4u);

    remote.submit(EditAndResend{0, "Hi"});
    const auto edited = until_finished(remote);
    EXPECT_EQ(all_of<RunStarted>(edited).at(0).kept_messages, 0);
    const Complete third = served.last_request();
    ASSERT_EQ(third.messages.size(), 2u);
    EXPECT_EQ(third.messages[1].content, "Hi");
}

TEST(RemoteEngine, RecordedAndExportedLikeALocalRun) {
    Served served;
    RemoteEngine remote(attach_to(served.url(), "tiny"));
    attached(remote);
    remote.submit(greedy(6, 2));
    remote.submit(SendMessage{"Hello"});
    const std::vector<Event> ev = until_finished(remote);

    const auto db = test::unique_temp_path("remote_engine.db");
    Store store(db);
    EventRecorder rec(store);
    for (const Event& e : ev) rec.apply(e);
    rec.end_batch();
    ConversationRecord c = store.load_conversation(rec.last_conversation_id());
    ASSERT_EQ(c.runs.size(), 1u);
    RunRecord& r = c.runs[0];
    EXPECT_EQ(r.model_path, served.url() + "/v1");
    EXPECT_EQ(r.model_sha256, "");  // a URL is no file
    const auto tokens = all_of<TokenEvent>(ev);
    ASSERT_EQ(r.tokens.size(), tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
        EXPECT_EQ(r.tokens[i].top_text, tokens[i].top_text);
        EXPECT_EQ(r.tokens[i].top.size(), tokens[i].top.size());
        EXPECT_EQ(r.tokens[i].top.size(), tokens[i].id < 0 ? 0u : 2u);
    }
    ASSERT_EQ(r.server_loads.size(), 2u);
    EXPECT_EQ(r.server_loads[1].generation_tokens,
              all_of<ServerLoadEvent>(ev)[1].generation_tokens);
    EXPECT_EQ(r.steps.size(), all_of<StepEvent>(ev).size());

    // The JSON export keeps them, and reads them back.
    const ConversationRecord back = conversation_from_json(conversation_to_json(c));
    ASSERT_EQ(back.runs.size(), 1u);
    EXPECT_EQ(back.runs[0].server_loads.size(), 2u);
    EXPECT_EQ(back.runs[0].server_loads[0].names, "vllm");
    ASSERT_EQ(back.runs[0].tokens.size(), tokens.size());
    EXPECT_EQ(back.runs[0].tokens[0].top_text, tokens[0].top_text);
}

TEST(RemoteEngine, CancelClosesTheRequestAndTheServerStops) {
    Served served(test_support::server_slow_model());
    RemoteEngine remote(attach_to(served.url(), {}, false));
    attached(remote);
    remote.submit(greedy(4000, 0));
    remote.submit(SendMessage{"Go on forever"});
    events_until(remote, [](const Event& e) { return std::holds_alternative<TokenEvent>(e); });
    remote.cancel();
    const auto ev = until_finished(remote);
    const RunFinished f = all_of<RunFinished>(ev).at(0);
    EXPECT_EQ(f.stop, "cancelled");
    EXPECT_LT(f.n_tokens, 4000);
    // The server saw its client go and stopped the generation.
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (served.server.counters().cancelled == 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(20ms);
    EXPECT_EQ(served.server.counters().cancelled, 1);
    // What arrived stays: the next turn goes after it.
    remote.submit(greedy(3, 0));
    remote.submit(SendMessage{"Short now"});
    EXPECT_NE(all_of<RunFinished>(until_finished(remote)).at(0).stop, "error");
    EXPECT_EQ(served.last_request().messages.size(), 4u);
}

// A server that takes the connection and never answers (a listening socket nobody accepts on):
// the attach waits for it, but destroying the engine — a window detaching — cancels that wait at
// once instead of after the 30 s read timeout.
TEST(RemoteEngine, AServerThatNeverAnswersDoesNotHoldTheDetach) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(fd, 4), 0);
    ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
    const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
    auto remote = std::make_unique<RemoteEngine>(attach_to(url));
    std::this_thread::sleep_for(300ms);  // connected; waiting for GET /v1/models' answer
    EXPECT_FALSE(remote->events().pop(0ms).has_value());  // nothing answered yet
    const auto t0 = std::chrono::steady_clock::now();
    remote.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);  // the read's timeout is 30 s
    ::close(fd);
}

TEST(RemoteEngine, WhatCannotWorkIsAnErrorThatSaysWhy) {
    EXPECT_THROW(RemoteEngine(attach_to("ftp://example.com")), Error);
    {
        // Nothing listens on a port just released.
        int port = 0;
        {
            Served gone;
            port = gone.port;
        }
        RemoteEngine remote(attach_to("http://127.0.0.1:" + std::to_string(port)));
        const auto ev = events_until(
            remote, [](const Event& e) { return std::holds_alternative<ErrorEvent>(e); });
        const ErrorEvent err = std::get<ErrorEvent>(ev.back());
        EXPECT_EQ(err.command, "load_model");
        EXPECT_NE(err.message.find("cannot connect"), std::string::npos) << err.message;
        remote.submit(SendMessage{"hello"});
        const auto refused = events_until(
            remote, [](const Event& e) { return std::holds_alternative<ErrorEvent>(e); });
        EXPECT_NE(std::get<ErrorEvent>(refused.back()).message.find("not attached"),
                  std::string::npos);
    }
    Served served;
    RemoteEngine remote(attach_to(served.url()));
    attached(remote);
    remote.submit(ComputeLogitLens{1, 0, 5});
    const auto lens = events_until(remote, [](const Event& e) {
        return std::holds_alternative<std::shared_ptr<const LogitLensEvent>>(e);
    });
    EXPECT_NE(std::get<std::shared_ptr<const LogitLensEvent>>(lens.back())->error.find("local"),
              std::string::npos);
    remote.submit(LoadModel{"x.gguf", {}});
    const auto refused =
        events_until(remote, [](const Event& e) { return std::holds_alternative<ErrorEvent>(e); });
    EXPECT_EQ(std::get<ErrorEvent>(refused.back()).command, "load_model");
}

}  // namespace
}  // namespace fluoro::app
