// The OpenAI-compatible server in-process over a bare Engine on a small seeded model: responses
// and their usage/timings against the engine's RunFinished, prompt-prefix reuse across requests,
// streaming (same text as a non-streamed answer), request validation and its error bodies, the
// API key, the body limit, the queue limit, serialized concurrent clients, a client that goes
// away, streamed or not (its generation is cancelled; the server goes on), and stop strings.
#include "server/openai_server.h"

#include <httplib.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "core/error.h"
#include "runtime/engine.h"
#include "server/chat_request.h"
#include "server_test_model.h"

namespace fluoro::app {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// A CompletionBackend over an Engine driven by hand, as the CLI's EngineDriver does. Remembers
// every RunFinished; token_delay slows the stream down (disconnect tests).
struct TestEngine {
    Engine engine{EngineOptions{TelemetryLevel::Summary}};
    std::mutex mu;
    std::vector<RunFinished> finished;
    std::chrono::milliseconds token_delay{0};
    std::atomic<int> running{0}, max_running{0};

    explicit TestEngine(const std::filesystem::path& model = test_support::server_tiny_model()) {
        LoadModel load{model, {}};
        load.settings.threads = 1;
        load.settings.ctx = 4096;
        engine.submit_blocking(load);
        engine.events().drain();
    }

    RunFinished last() {
        std::lock_guard<std::mutex> lock(mu);
        return finished.empty() ? RunFinished{} : finished.back();
    }
    size_t runs() {
        std::lock_guard<std::mutex> lock(mu);
        return finished.size();
    }

    CompletionBackend backend() {
        CompletionBackend b;
        b.run = [this](Complete c, const std::function<void(const Event&)>& on_event,
                       const std::atomic<bool>&) {
            const int now = ++running;
            int seen = max_running.load();
            while (now > seen && !max_running.compare_exchange_weak(seen, now)) {
            }
            engine.submit(std::move(c));
            for (;;) {
                auto ev = engine.events().pop(50ms);
                if (!ev) continue;
                on_event(*ev);
                if (std::holds_alternative<TokenEvent>(*ev) && token_delay.count() > 0)
                    std::this_thread::sleep_for(token_delay);
                RunFinished f;
                if (const auto* err = std::get_if<ErrorEvent>(&*ev)) {
                    if (err->run != 0) continue;
                    f.stop = "error";
                    f.error = err->message;
                } else if (const auto* fin = std::get_if<RunFinished>(&*ev)) {
                    f = *fin;
                } else {
                    continue;
                }
                --running;
                std::lock_guard<std::mutex> lock(mu);
                finished.push_back(f);
                return f;
            }
        };
        b.cancel = [this] { engine.cancel(); };
        return b;
    }
};

struct Served {
    TestEngine eng;
    OpenAiServer server;
    int port = 0;
    explicit Served(ServerOptions opt = {}, std::chrono::milliseconds delay = 0ms,
                    const std::filesystem::path& model = test_support::server_tiny_model())
        : eng(model), server(with_defaults(std::move(opt)), eng.backend()) {
        eng.token_delay = delay;
        port = server.start("127.0.0.1", 0);
    }
    static ServerOptions with_defaults(ServerOptions o) {
        o.model_id = "tiny.gguf";
        o.log = false;
        return o;
    }
    httplib::Client client() const {
        httplib::Client c("127.0.0.1", port);
        c.set_read_timeout(120, 0);
        c.set_write_timeout(30, 0);
        return c;
    }
    httplib::Result post(const std::string& body) const {
        auto c = client();
        return c.Post("/v1/chat/completions", body, "application/json");
    }
};

json request(const std::string& user, int64_t max_tokens = 12, bool stream = false,
             const std::string& system = "You are a terse assistant that answers briefly.") {
    json messages = json::array();
    if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
    messages.push_back({{"role", "user"}, {"content", user}});
    json j{{"model", "whatever-model"},
           {"messages", messages},
           {"max_tokens", max_tokens},
           {"temperature", 0},
           {"seed", 7}};
    if (stream) {
        j["stream"] = true;
        j["stream_options"] = {{"include_usage", true}};
    }
    return j;
}

// The `data:` payloads of an event stream, in order.
std::vector<std::string> sse_data(const std::string& body) {
    std::vector<std::string> out;
    std::istringstream in(body);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
    }
    return out;
}

void expect_error(const httplib::Result& r, int status, const std::string& param = {}) {
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, status) << r->body;
    const json j = json::parse(r->body);
    ASSERT_TRUE(j.contains("error")) << r->body;
    EXPECT_TRUE(j["error"]["message"].is_string());
    EXPECT_FALSE(j["error"]["message"].get<std::string>().empty());
    EXPECT_TRUE(j["error"].contains("type"));
    EXPECT_TRUE(j["error"].contains("param"));
    EXPECT_TRUE(j["error"].contains("code"));
    if (!param.empty()) {
        EXPECT_EQ(j["error"]["param"], param) << r->body;
    }
}

TEST(OpenAiServer, ANonStreamedCompletionReportsTheRunsUsage) {
    Served s;
    const auto r = s.post(request("Hello there").dump());
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_NE(r->get_header_value("Content-Type").find("application/json"), std::string::npos);
    const json j = json::parse(r->body);
    const RunFinished f = s.eng.last();
    EXPECT_EQ(j["object"], "chat.completion");
    EXPECT_EQ(j["model"], "whatever-model");
    EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
    EXPECT_GT(j["created"].get<int64_t>(), 0);
    ASSERT_EQ(j["choices"].size(), 1u);
    EXPECT_EQ(j["choices"][0]["index"], 0);
    EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
    EXPECT_EQ(j["choices"][0]["message"]["content"], f.text);
    EXPECT_EQ(j["choices"][0]["finish_reason"], f.stop == "eog" ? "stop" : "length");
    const json& u = j["usage"];
    EXPECT_GT(f.prompt_tokens, 0);
    EXPECT_EQ(u["prompt_tokens"], f.prompt_tokens);
    EXPECT_EQ(u["completion_tokens"], f.n_tokens);
    EXPECT_EQ(u["total_tokens"], f.prompt_tokens + f.n_tokens);
    EXPECT_EQ(u["prompt_tokens_details"]["cached_tokens"], f.cached_tokens);
    const json& t = j["timings"];
    EXPECT_EQ(t["prompt_tokens"], f.prompt_tokens);
    EXPECT_EQ(t["cached_tokens"], f.cached_tokens);
    EXPECT_EQ(t["predicted_tokens"], f.n_tokens);
    for (const char* k :
         {"prompt_ms", "ttft_ms", "predicted_per_second", "drafted_tokens", "accepted_tokens"})
        EXPECT_TRUE(t.contains(k)) << k;

    // The same system prompt with another question: its tokens come from the cache.
    const auto r2 = s.post(request("What is the capital of France?").dump());
    ASSERT_TRUE(r2);
    ASSERT_EQ(r2->status, 200) << r2->body;
    const json j2 = json::parse(r2->body);
    const RunFinished f2 = s.eng.last();
    EXPECT_GT(f2.cached_tokens, 0);
    EXPECT_EQ(j2["usage"]["prompt_tokens_details"]["cached_tokens"], f2.cached_tokens);
    EXPECT_EQ(j2["usage"]["prompt_tokens"], f2.prompt_tokens);
    EXPECT_EQ(j2["usage"]["completion_tokens"], f2.n_tokens);
    EXPECT_EQ(s.server.counters().completions, 2);
}

TEST(OpenAiServer, AStreamedCompletionSendsTheSameTextInChunks) {
    Served s;
    const auto plain = s.post(request("Tell me a story", 16).dump());
    ASSERT_TRUE(plain);
    ASSERT_EQ(plain->status, 200) << plain->body;
    const std::string expected =
        json::parse(plain->body)["choices"][0]["message"]["content"].get<std::string>();

    const auto r = s.post(request("Tell me a story", 16, true).dump());
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
    const RunFinished f = s.eng.last();
    const auto data = sse_data(r->body);
    ASSERT_GE(data.size(), 4u) << r->body;
    EXPECT_EQ(data.back(), "[DONE]");
    std::string text, finish;
    bool usage_seen = false;
    std::string id;
    for (size_t i = 0; i + 1 < data.size(); ++i) {
        const json c = json::parse(data[i]);
        EXPECT_EQ(c["object"], "chat.completion.chunk");
        EXPECT_EQ(c["model"], "whatever-model");
        if (i == 0) {
            id = c["id"];
            EXPECT_EQ(c["choices"][0]["delta"]["role"], "assistant");
        } else {
            EXPECT_EQ(c["id"], id);
        }
        if (c["choices"].empty()) {  // the usage chunk, last before [DONE]
            EXPECT_EQ(i + 2, data.size());
            usage_seen = true;
            EXPECT_EQ(c["usage"]["prompt_tokens"], f.prompt_tokens);
            EXPECT_EQ(c["usage"]["completion_tokens"], f.n_tokens);
            EXPECT_EQ(c["usage"]["prompt_tokens_details"]["cached_tokens"], f.cached_tokens);
            EXPECT_EQ(c["timings"]["predicted_tokens"], f.n_tokens);
            continue;
        }
        const json& ch = c["choices"][0];
        if (!ch["finish_reason"].is_null()) {
            EXPECT_TRUE(finish.empty());
            finish = ch["finish_reason"];
            continue;
        }
        EXPECT_TRUE(finish.empty()) << "content after the finish chunk";
        if (ch["delta"].contains("content")) text += ch["delta"]["content"].get<std::string>();
    }
    EXPECT_TRUE(usage_seen);
    EXPECT_GT(f.n_tokens, 0);
    EXPECT_EQ(finish, f.stop == "eog" ? "stop" : "length");
    EXPECT_EQ(text, expected);
    EXPECT_EQ(text, f.text);

    // Without include_usage there is no usage chunk.
    json no_usage = request("Tell me a story", 4, true);
    no_usage.erase("stream_options");
    const auto r2 = s.post(no_usage.dump());
    ASSERT_TRUE(r2);
    ASSERT_EQ(r2->status, 200);
    for (const auto& d : sse_data(r2->body)) {
        if (d != "[DONE]") {
            EXPECT_FALSE(json::parse(d).contains("usage")) << d;
        }
    }
}

// n > 1: the choices are runs one after another, choice i sampled with seed + i — so choice i is
// what a request for one choice with seed + i gets; usage counts the prompt once and every
// choice's tokens; streamed, each choice's chunks carry its index, its first the role, its last
// a finish_reason, and each index's text is the non-streamed choice's.
TEST(OpenAiServer, NChoicesAreRunsWithSeedPlusTheirIndex) {
    Served s;
    const auto sampled = [](uint64_t seed, int n) {
        json q = request("Tell me a story", 8);
        q["temperature"] = 1.0;
        q["seed"] = seed;
        q["n"] = n;
        return q;
    };
    const auto answer = [&](const json& q) {
        const auto r = s.post(q.dump());
        if (!r || r->status != 200) {
            ADD_FAILURE() << (r ? r->body : httplib::to_string(r.error()));
            return json::object();
        }
        return json::parse(r->body);
    };
    const json req = sampled(7, 3);
    const json j = answer(req);
    ASSERT_EQ(j["choices"].size(), 3u);
    std::vector<RunFinished> runs;
    {
        std::lock_guard<std::mutex> lock(s.eng.mu);
        runs = s.eng.finished;
    }
    ASSERT_EQ(runs.size(), 3u);
    int64_t tokens = 0;
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(j["choices"][i]["index"], int(i));
        EXPECT_EQ(j["choices"][i]["message"]["content"], runs[i].text) << i;
        tokens += runs[i].n_tokens;
    }
    EXPECT_EQ(j["usage"]["prompt_tokens"], runs[0].prompt_tokens);
    EXPECT_EQ(j["usage"]["completion_tokens"], tokens);
    EXPECT_EQ(j["usage"]["total_tokens"], runs[0].prompt_tokens + tokens);
    // Sampled at temperature 1 the three differ (8 tokens each from a 512-token vocabulary:
    // equal texts would mean the seeds were not varied).
    EXPECT_NE(runs[0].text, runs[1].text);
    EXPECT_NE(runs[1].text, runs[2].text);

    // Choice 1 is the single choice of seed 7 + 1.
    EXPECT_EQ(answer(sampled(8, 1))["choices"][0]["message"]["content"],
              j["choices"][1]["message"]["content"]);

    // Streamed: the same texts, by index.
    json streamed = req;
    streamed["stream"] = true;
    streamed["stream_options"] = {{"include_usage", true}};
    const auto rs = s.post(streamed.dump());
    ASSERT_TRUE(rs);
    ASSERT_EQ(rs->status, 200) << rs->body;
    std::vector<std::string> texts(3), finishes(3);
    std::vector<int> chunks(3, 0);
    bool usage_seen = false;
    for (const std::string& d : sse_data(rs->body)) {
        if (d == "[DONE]") continue;
        const json c = json::parse(d);
        if (c["choices"].empty()) {
            usage_seen = true;
            EXPECT_EQ(c["usage"]["completion_tokens"], tokens);
            continue;
        }
        const int i = c["choices"][0]["index"];
        ASSERT_TRUE(i >= 0 && i < 3) << d;
        const json& ch = c["choices"][0];
        EXPECT_EQ(ch["delta"].contains("role"), chunks[size_t(i)] == 0) << d;
        ++chunks[size_t(i)];
        EXPECT_TRUE(finishes[size_t(i)].empty()) << "a chunk after choice " << i << "'s finish";
        if (!ch["finish_reason"].is_null()) finishes[size_t(i)] = ch["finish_reason"];
        if (ch["delta"].contains("content"))
            texts[size_t(i)] += ch["delta"]["content"].get<std::string>();
    }
    EXPECT_TRUE(usage_seen);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(texts[i], j["choices"][i]["message"]["content"]) << i;
        EXPECT_FALSE(finishes[i].empty()) << i;
    }

    // The legacy completions take n too.
    auto c = s.client();
    const auto rl = c.Post(
        "/v1/completions",
        json{{"prompt", "Once upon a time"}, {"max_tokens", 4}, {"n", 2}, {"seed", 3}}.dump(),
        "application/json");
    ASSERT_TRUE(rl);
    ASSERT_EQ(rl->status, 200) << rl->body;
    const json l = json::parse(rl->body);
    ASSERT_EQ(l["choices"].size(), 2u);
    EXPECT_EQ(l["choices"][1]["index"], 1);
    EXPECT_TRUE(l["choices"][1]["text"].is_string());
}

TEST(OpenAiServer, ContentPartsAreConcatenated) {
    Served s;
    json parts = request("");
    parts["messages"][1]["content"] = json::array(
        {{{"type", "text"}, {"text", "Hello "}}, {{"type", "text"}, {"text", "there"}}});
    const auto a = s.post(parts.dump());
    ASSERT_TRUE(a);
    ASSERT_EQ(a->status, 200) << a->body;
    const auto b = s.post(request("Hello there").dump());
    ASSERT_TRUE(b);
    ASSERT_EQ(b->status, 200) << b->body;
    EXPECT_EQ(json::parse(a->body)["choices"][0]["message"]["content"],
              json::parse(b->body)["choices"][0]["message"]["content"]);
}

// POST /v1/completions: the same run as a raw Complete, answered as text_completion objects —
// plain and streamed alike; prompt shapes and fields it cannot honour refused by name.
TEST(OpenAiServer, LegacyCompletionsAnswerAsTextCompletion) {
    Served s;
    auto c = s.client();
    const json body{
        {"model", "m"}, {"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}};
    const auto r = c.Post("/v1/completions", body.dump(), "application/json");
    ASSERT_TRUE(r) << "no response";
    ASSERT_EQ(r->status, 200) << r->body;
    const json j = json::parse(r->body);
    EXPECT_EQ(j["object"], "text_completion");
    EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u) << j["id"];
    ASSERT_EQ(j["choices"].size(), 1u);
    const json& ch = j["choices"][0];
    EXPECT_TRUE(ch["text"].is_string());
    EXPECT_FALSE(ch.contains("message"));
    EXPECT_TRUE(ch["logprobs"].is_null());
    EXPECT_EQ(j["usage"]["completion_tokens"], 6);
    EXPECT_EQ(ch["finish_reason"], "length");

    json streamed_body = body;
    streamed_body["stream"] = true;
    const auto sr = c.Post("/v1/completions", streamed_body.dump(), "application/json");
    ASSERT_TRUE(sr && sr->status == 200);
    std::string text;
    for (size_t at = 0; (at = sr->body.find("data: ", at)) != std::string::npos;) {
        const size_t end = sr->body.find("\n\n", at);
        const std::string data = sr->body.substr(at + 6, end - at - 6);
        at = end;
        if (data == "[DONE]") break;
        const json chunk = json::parse(data);
        EXPECT_EQ(chunk["object"], "text_completion") << data;
        if (!chunk["choices"].empty()) text += chunk["choices"][0]["text"].get<std::string>();
    }
    EXPECT_EQ(text, ch["text"].get<std::string>());

    const auto refused = [&](json b, const std::string& param) {
        const auto e = c.Post("/v1/completions", b.dump(), "application/json");
        expect_error(e, 400, param);
    };
    refused(json{{"max_tokens", 1}}, "prompt");
    refused(json{{"prompt", json::array({"a", "b"})}}, "prompt");
    refused(json{{"prompt", json::array({1, 2, 3})}}, "prompt");
    refused(json{{"prompt", "x"}, {"echo", true}}, "echo");
    refused(json{{"prompt", "x"}, {"best_of", 3}}, "best_of");
    refused(json{{"prompt", "x"}, {"logprobs", 2}}, "logprobs");
    refused(json{{"prompt", "x"}, {"n", 0}}, "n");
    refused(json{{"prompt", "x"}, {"n", kMaxChoices + 1}}, "n");
}

TEST(OpenAiServer, BadRequestsGetOpenAiErrors) {
    Served s;
    expect_error(s.post("{\"messages\": [}"), 400);
    expect_error(s.post("[1, 2]"), 400);
    expect_error(s.post(json{{"model", "m"}}.dump()), 400, "messages");
    expect_error(s.post(json{{"messages", "hello"}}.dump()), 400, "messages");
    expect_error(s.post(json{{"messages", json::array()}}.dump()), 400, "messages");
    json bad_role = request("hi");
    bad_role["messages"][1]["role"] = "wizard";
    expect_error(s.post(bad_role.dump()), 400, "messages[1].role");
    json late_system = request("hi");
    late_system["messages"].push_back({{"role", "system"}, {"content", "x"}});
    expect_error(s.post(late_system.dump()), 400);
    json ends_with_assistant = request("hi");
    ends_with_assistant["messages"].push_back({{"role", "assistant"}, {"content", "x"}});
    expect_error(s.post(ends_with_assistant.dump()), 400, "messages");
    json no_content = request("hi");
    no_content["messages"][1].erase("content");
    expect_error(s.post(no_content.dump()), 400, "messages[1].content");
    for (const json& n : {json(0), json(kMaxChoices + 1), json(1.5)}) {
        json bad_n = request("hi");
        bad_n["n"] = n;
        expect_error(s.post(bad_n.dump()), 400, "n");
    }
    json wrong_type = request("hi");
    wrong_type["temperature"] = "hot";
    expect_error(s.post(wrong_type.dump()), 400, "temperature");
    json zero_tokens = request("hi");
    zero_tokens["max_tokens"] = 0;
    expect_error(s.post(zero_tokens.dump()), 400, "max_tokens");
    for (const json& bad : {json::array({"a", "b", "c", "d", "e"}), json::array({"a", ""}),
                            json::array({"a", 3}), json(7), json(std::string(257, 'x'))}) {
        json stop = request("hi");
        stop["stop"] = bad;
        expect_error(s.post(stop.dump()), 400, "stop");
    }
    for (const json& top : {json(21), json(-1), json(2.5), json("3")}) {
        json lp = request("hi");
        lp["logprobs"] = true;
        lp["top_logprobs"] = top;
        expect_error(s.post(lp.dump()), 400, "top_logprobs");
    }
    json schema = request("hi");
    schema["response_format"] = {{"type", "json_schema"}, {"json_schema", json::object()}};
    expect_error(s.post(schema.dump()), 400, "response_format");
    json top_alone = request("hi");
    top_alone["top_logprobs"] = 2;  // needs logprobs: true, as OpenAI says
    expect_error(s.post(top_alone.dump()), 400, "top_logprobs");
    json image = request("hi");
    image["messages"][1]["content"] = json::array({{{"type", "image_url"}, {"image_url", "x"}}});
    expect_error(s.post(image.dump()), 400);
    expect_error(s.client().Get("/v1/nowhere"), 404);
    EXPECT_EQ(s.eng.runs(), 0u);  // nothing reached the engine

    // Harmless extras are accepted: n = 1, user, penalties, stop: null, max_completion_tokens.
    json ok = request("hi");
    ok["n"] = 1;
    ok["user"] = "someone";
    ok["presence_penalty"] = 0.0;
    ok["stop"] = nullptr;
    ok.erase("max_tokens");
    ok["max_completion_tokens"] = 3;
    const auto r = s.post(ok.dump());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_LE(json::parse(r->body)["usage"]["completion_tokens"].get<int64_t>(), 3);
}

// A prompt longer than the context (4096 tokens here) is the client's error: 400 with both token
// counts in OpenAI's shape (code context_length_exceeded), streamed or not; it was a 500.
TEST(OpenAiServer, APromptOverTheContextGets400WithTheCounts) {
    Served s;
    std::string long_text;
    for (int i = 0; i < 5000; ++i) long_text += "word ";
    for (const bool stream : {false, true}) {
        const auto r = s.post(request(long_text, 4, stream).dump());
        expect_error(r, 400, "messages");
        const json e = json::parse(r->body)["error"];
        EXPECT_EQ(e["code"], "context_length_exceeded");
        EXPECT_EQ(e["context_tokens"], 4096);
        EXPECT_GT(e["prompt_tokens"].get<int64_t>(), 4096);
        const std::string msg = e["message"];
        EXPECT_NE(msg.find("4096"), std::string::npos) << msg;
        EXPECT_NE(msg.find(std::to_string(e["prompt_tokens"].get<int64_t>())), std::string::npos)
            << msg;
    }
    const auto ok = s.post(request("hi", 2).dump());
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200);
}

TEST(OpenAiServer, ABodyOverTheLimitGets413) {
    ServerOptions o;
    o.max_body = 512;
    Served s(o);
    const auto r = s.post(request(std::string(2000, 'a')).dump());
    expect_error(r, 413);
    const auto small = s.post(request("hi", 2).dump());
    ASSERT_TRUE(small);
    EXPECT_EQ(small->status, 200);
}

TEST(OpenAiServer, TheApiKeyIsRequiredWhenSet) {
    ServerOptions o;
    o.api_key = "sesame";
    Served s(o);
    expect_error(s.post(request("hi", 2).dump()), 401);
    {
        auto c = s.client();
        c.set_bearer_token_auth("wrong");
        expect_error(c.Post("/v1/chat/completions", request("hi", 2).dump(), "application/json"),
                     401);
        expect_error(c.Get("/v1/models"), 401);
    }
    auto c = s.client();
    c.set_bearer_token_auth("sesame");
    const auto r = c.Post("/v1/chat/completions", request("hi", 2).dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    const auto m = c.Get("/v1/models");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->status, 200);
}

// A port another server listens on is refused with an error, not shared (httplib's default
// SO_REUSEPORT would let both bind it and split the clients between them).
TEST(OpenAiServer, APortInUseIsAnError) {
    Served s;
    TestEngine other;
    OpenAiServer second(Served::with_defaults({}), other.backend());
    try {
        second.start("127.0.0.1", s.port);
        FAIL() << "a second server bound port " << s.port;
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot listen on 127.0.0.1:"), std::string::npos)
            << e.what();
    }
    const auto r = s.client().Get("/v1/models");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
}

TEST(OpenAiServer, ModelsListsTheLoadedModel) {
    Served s;
    const auto r = s.client().Get("/v1/models");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200);
    const json j = json::parse(r->body);
    EXPECT_EQ(j["object"], "list");
    ASSERT_EQ(j["data"].size(), 1u);
    EXPECT_EQ(j["data"][0]["id"], "tiny.gguf");
    EXPECT_EQ(j["data"][0]["object"], "model");
    EXPECT_EQ(j["data"][0]["owned_by"], "fluoroscope");
    EXPECT_FALSE(j["data"][0].contains("max_model_len"));  // nothing known: nothing claimed
    // With the engine's ModelLoaded: vLLM's max_model_len and a meta block.
    ServerOptions o;
    o.model_info.path = "/m/tiny.gguf";
    o.model_info.arch = "llama";
    o.model_info.ctx = 2048;
    o.model_info.kv_type = "f16";
    Served withinfo(o);
    const json k = json::parse(withinfo.client().Get("/v1/models")->body);
    EXPECT_EQ(k["data"][0]["max_model_len"], 2048);
    EXPECT_EQ(k["data"][0]["meta"]["arch"], "llama");
    EXPECT_EQ(k["data"][0]["meta"]["n_ctx"], 2048);
    EXPECT_EQ(k["data"][0]["meta"]["kv_type"], "f16");
}

TEST(OpenAiServer, ConcurrentClientsAreServedOneAtATime) {
    Served s;
    const std::vector<std::string> questions = {"Why is the sky blue?", "Name a prime number"};
    std::vector<std::string> expected;
    for (const auto& q : questions) {
        const auto r = s.post(request(q, 24).dump());
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200);
        expected.push_back(r->body);
    }
    std::vector<std::string> got(questions.size());
    std::vector<int> status(questions.size(), 0);
    for (int round = 0; round < 2; ++round) {
        std::vector<std::thread> threads;
        for (size_t i = 0; i < questions.size(); ++i)
            threads.emplace_back([&, i] {
                const auto r = s.post(request(questions[i], 24, round == 1).dump());
                if (r) {
                    status[i] = r->status;
                    got[i] = r->body;
                }
            });
        for (auto& t : threads) t.join();
        for (size_t i = 0; i < questions.size(); ++i) {
            ASSERT_EQ(status[i], 200) << got[i];
            const std::string want = json::parse(expected[i])["choices"][0]["message"]["content"];
            std::string text;
            if (round == 0) {
                text = json::parse(got[i])["choices"][0]["message"]["content"];
            } else {
                for (const auto& d : sse_data(got[i])) {
                    if (d == "[DONE]") continue;
                    const json c = json::parse(d);
                    if (!c["choices"].empty() && c["choices"][0]["delta"].contains("content"))
                        text += c["choices"][0]["delta"]["content"].get<std::string>();
                }
            }
            EXPECT_EQ(text, want) << "question " << i << " round " << round;
        }
    }
    EXPECT_EQ(s.eng.max_running.load(), 1);
}

// Streams a long answer and hangs up after `chunks` chunks; `on_streaming` runs once the first
// chunk came.
httplib::Result stream_and_hang_up(const Served& s, int chunks,
                                   const std::function<void()>& on_streaming = {}) {
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/chat/completions";
    req.set_header("Content-Type", "application/json");
    req.body = request("Tell me a very long story", 3000, true).dump();
    int seen = 0;
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
        if (++seen == 1 && on_streaming) on_streaming();
        return seen < chunks;
    };
    auto c = s.client();
    return c.send(req);
}

// After a client of a 3000-token request went away: its generation was cancelled early, and
// the server and the engine go on.
void expect_cancelled_then_serving(Served& s) {
    for (int i = 0; i < 600 && s.server.counters().cancelled == 0; ++i)
        std::this_thread::sleep_for(50ms);
    EXPECT_EQ(s.server.counters().cancelled, 1);
    EXPECT_EQ(s.eng.last().stop, "cancelled");
    EXPECT_LT(s.eng.last().n_tokens, 3000);
    const auto next = s.post(request("hi", 4).dump());
    ASSERT_TRUE(next);
    EXPECT_EQ(next->status, 200) << next->body;
    EXPECT_NE(s.eng.last().stop, "cancelled");
}

TEST(OpenAiServer, AClientThatHangsUpMidStreamCancelsItsGeneration) {
    Served s({}, 2ms);
    const auto r = stream_and_hang_up(s, 3);
    EXPECT_FALSE(r);  // the client cancelled the read
    expect_cancelled_then_serving(s);
}

// A non-streamed request's client that gives up (its read timeout) cancels the generation too,
// although nothing is written to it before the end: the server watches its socket. (The slow
// model: the engine must still be generating when the client goes.)
TEST(OpenAiServer, AClientThatHangsUpBeforeANonStreamedReplyCancelsItsGeneration) {
    Served s({}, 0ms, test_support::server_slow_model());
    {
        httplib::Client c("127.0.0.1", s.port);
        c.set_read_timeout(0, 300000);  // 0.3 s; 3000 tokens take seconds
        const auto r =
            c.Post("/v1/chat/completions", request("Tell me a very long story", 3000).dump(),
                   "application/json");
        EXPECT_FALSE(r);
    }  // the client's socket is closed here
    expect_cancelled_then_serving(s);
}

TEST(OpenAiServer, RequestsBeyondTheQueueGet429) {
    ServerOptions o;
    o.max_queue = 0;  // the running request only
    Served s(o, 2ms);
    std::atomic<bool> streaming{false}, release{false};
    std::thread first([&] {
        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/chat/completions";
        req.set_header("Content-Type", "application/json");
        req.body = request("Tell me a very long story", 3000, true).dump();
        req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
            streaming = true;
            return !release.load();
        };
        auto c = s.client();
        c.send(req);
    });
    for (int i = 0; i < 600 && !streaming.load(); ++i) std::this_thread::sleep_for(20ms);
    ASSERT_TRUE(streaming.load());
    expect_error(s.post(request("hi", 2).dump()), 429);
    release = true;
    first.join();
    for (int i = 0; i < 600 && s.server.counters().cancelled == 0; ++i)
        std::this_thread::sleep_for(50ms);
    const auto r = s.post(request("hi", 2).dump());
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
}

// A stop string taken from the middle of a greedy reply: the reply ends before it, streamed or
// not, and a streamed reply never shows the stop string's first bytes (they are held back until
// the next token tells whether they begin it).
// response_format json_object: the reply is decoded under the JSON constraint
// (decode/json_constraint.h). The tiny random model closes its object within the limit or not;
// either way the content is an object or, cut at max_tokens ("length"), the start of one — never
// anything else.
TEST(OpenAiServer, JsonObjectResponseFormatGivesAnObject) {
    Served s;
    for (const int seed : {1, 2, 3}) {
        json req = request("Give me JSON", 48);
        req["response_format"] = {{"type", "json_object"}};
        req["seed"] = seed;
        req["temperature"] = 1.0;
        const auto r = s.post(req.dump());
        ASSERT_TRUE(r);
        ASSERT_EQ(r->status, 200) << r->body;
        const json j = json::parse(r->body);
        const std::string text = j["choices"][0]["message"]["content"];
        const std::string finish = j["choices"][0]["finish_reason"];
        SCOPED_TRACE(finish + ": " + text);
        std::printf("[json] seed %d: %s, %zu bytes: %s\n", seed, finish.c_str(), text.size(),
                    text.c_str());
        if (finish == "stop") {
            EXPECT_TRUE(json::parse(text).is_object());
        } else {
            EXPECT_EQ(finish, "length");
            try {
                (void)json::parse(text);
                ADD_FAILURE() << "a cut reply parsed whole";
            } catch (const json::parse_error& e) {
                EXPECT_EQ(e.byte, text.size() + 1) << e.what();  // at the end: a prefix
            }
        }
    }
}

TEST(OpenAiServer, StopStringsCutTheReplyStreamedOrNot) {
    Served s;
    const auto full = s.post(request("Tell me something", 24).dump());
    ASSERT_TRUE(full);
    ASSERT_EQ(full->status, 200) << full->body;
    const std::string text = json::parse(full->body)["choices"][0]["message"]["content"];
    ASSERT_GE(text.size(), 12u) << text;
    // Three bytes from the middle (on a character boundary): most likely spanning tokens.
    size_t at = text.size() / 2;
    while (at > 0 && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;
    size_t end = at + 3;
    while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
    const std::string stop = text.substr(at, end - at);
    const std::string expected = text.substr(0, text.find(stop));

    json req = request("Tell me something", 24);
    req["stop"] = json::array({"never appears \x01", stop});
    const auto cut = s.post(req.dump());
    ASSERT_TRUE(cut);
    ASSERT_EQ(cut->status, 200) << cut->body;
    const json j = json::parse(cut->body);
    EXPECT_EQ(j["choices"][0]["message"]["content"], expected);
    EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(s.eng.last().stop, "stop_string");
    EXPECT_EQ(s.eng.last().text, expected);

    req["stream"] = true;
    const auto streamed = s.post(req.dump());
    ASSERT_TRUE(streamed);
    ASSERT_EQ(streamed->status, 200) << streamed->body;
    std::string got, finish;
    for (const std::string& d : sse_data(streamed->body)) {
        if (d == "[DONE]") break;
        const json c = json::parse(d);
        if (c["choices"].empty()) continue;
        const json& delta = c["choices"][0]["delta"];
        if (delta.contains("content")) {
            got += delta["content"].get<std::string>();
            EXPECT_EQ(got, expected.substr(0, got.size())) << "streamed past the cut: " << got;
        }
        if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
    }
    EXPECT_EQ(got, expected);
    EXPECT_EQ(finish, "stop");
}

}  // namespace
}  // namespace fluoro::app

namespace fluoro::app {
namespace {

json weather_tools() {
    return json::array({{{"type", "function"},
                         {"function",
                          {{"name", "get_weather"},
                           {"description", "Weather for a city"},
                           {"parameters",
                            {{"type", "object"},
                             {"properties", {{"city", {{"type", "string"}}}}},
                             {"required", {"city"}}}}}}}});
}

// Tools pass through to the model's template, and a conversation that called a tool and carries
// its result (ending with the tool message) is accepted and answered; what cannot be honoured is a
// 400 naming the field. (SmolLM2's template renders tool turns like any other role.)
TEST(OpenAiServer, ToolsAndToolResultsAreAcceptedOthersNamed) {
    Served s;
    json r = request("What is the weather in Paris?", 4);
    r["tools"] = weather_tools();
    r["tool_choice"] = "auto";
    r["messages"].push_back(
        {{"role", "assistant"},
         {"content", nullptr},
         {"tool_calls",
          json::array({{{"id", "call_1"},
                        {"type", "function"},
                        {"function",
                         {{"name", "get_weather"}, {"arguments", "{\"city\":\"Paris\"}"}}}}})}});
    r["messages"].push_back({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "18 C"}});
    const auto ok = s.post(r.dump());
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200) << ok->body;
    EXPECT_GT(json::parse(ok->body)["usage"]["prompt_tokens"].get<int64_t>(), 0);

    json required = request("hi", 2);
    required["tools"] = weather_tools();
    required["tool_choice"] = "required";
    expect_error(s.post(required.dump()), 400, "tool_choice");
    json bad_tool = request("hi", 2);
    bad_tool["tools"] = json::array({{{"type", "function"}, {"function", {{"name", ""}}}}});
    expect_error(s.post(bad_tool.dump()), 400, "tools[0].function.name");
    json bad_args = r;
    bad_args["messages"][2]["tool_calls"][0]["function"]["arguments"] = "{not json";
    expect_error(s.post(bad_args.dump()), 400, "messages[2].tool_calls[0].function.arguments");
    json no_id = r;
    no_id["messages"][3].erase("tool_call_id");
    expect_error(s.post(no_id.dump()), 400, "messages[3].tool_call_id");
    json kwargs = request("hi", 2);
    kwargs["chat_template_kwargs"] = {{"enable_thinking", false}};
    const auto k = s.post(kwargs.dump());
    ASSERT_TRUE(k);
    EXPECT_EQ(k->status, 200) << k->body;
    kwargs["chat_template_kwargs"] = {{"something_else", 1}};
    expect_error(s.post(kwargs.dump()), 400, "chat_template_kwargs");
}

}  // namespace
}  // namespace fluoro::app
