// What the server makes of a reply that calls a tool or reasons, on a scripted backend that emits
// fixed tokens (so the test is about the server, not a model; its RunStarted says the model's
// template teaches the Hermes syntax, as Qwen 3's does): Hermes-format calls come back as
// message.tool_calls with finish_reason "tool_calls", streamed as content up to the call and then
// one tool_calls delta; a split reply comes back as reasoning_content + content, streamed as
// reasoning_content deltas then content deltas. Without tools in the request the same text is
// plain content.
#include <gtest/gtest.h>

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/openai_server.h"

namespace fluoro::app {
namespace {

using nlohmann::json;

struct Piece {
    std::string text;
    bool reasoning = false;  // a split token of the reasoning (markers removed from the text)
};

// Emits `pieces` as tokens; split tokens when any is reasoning, as the engine does.
CompletionBackend scripted(std::vector<Piece> pieces) {
    CompletionBackend b;
    b.run = [pieces](Complete, const std::function<void(const Event&)>& on_event,
                     const std::atomic<bool>&) {
        RunStarted rs;
        rs.tool_call_syntax = ToolCallSyntax::Hermes;  // as a Qwen 3 template teaches
        on_event(rs);
        RunFinished f;
        f.stop = "eog";
        f.prompt_tokens = 5;
        bool split = false;
        for (const Piece& p : pieces) split = split || p.reasoning;
        for (size_t i = 0; i < pieces.size(); ++i) {
            TokenEvent t;
            t.index = int64_t(i);
            t.id = int32_t(100 + i);
            t.piece = pieces[i].text;
            t.split = split;
            t.reasoning = pieces[i].reasoning;
            (pieces[i].reasoning ? t.reasoning_text : t.answer_text) = pieces[i].text;
            on_event(t);
            f.text += pieces[i].reasoning ? "" : pieces[i].text;
            (pieces[i].reasoning ? f.reasoning_text : f.answer_text) += pieces[i].text;
            f.reasoning_tokens += pieces[i].reasoning;
            ++f.n_tokens;
        }
        on_event(f);
        return f;
    };
    b.cancel = [] {};
    return b;
}

struct Scripted {
    std::unique_ptr<OpenAiServer> server;
    int port = 0;
    explicit Scripted(std::vector<Piece> pieces) {
        ServerOptions o;
        o.log = false;
        server = std::make_unique<OpenAiServer>(o, scripted(std::move(pieces)));
        port = server->start("127.0.0.1", 0);
    }
    httplib::Result post(const json& body) {
        httplib::Client c("127.0.0.1", port);
        c.set_read_timeout(30, 0);
        return c.Post("/v1/chat/completions", body.dump(), "application/json");
    }
};

json request(bool tools, bool stream) {
    json j{{"messages", json::array({{{"role", "user"}, {"content", "Weather in Paris?"}}})}};
    if (tools)
        j["tools"] = json::array(
            {{{"type", "function"},
              {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}});
    if (stream) j["stream"] = true;
    return j;
}

std::vector<json> sse(const std::string& body) {
    std::vector<json> out;
    for (size_t pos = 0; (pos = body.find("data: ", pos)) != std::string::npos;) {
        const size_t end = body.find("\n\n", pos);
        const std::string data = body.substr(pos + 6, end - pos - 6);
        if (data != "[DONE]") out.push_back(json::parse(data));
        pos = end;
    }
    return out;
}

const std::vector<Piece> kCall = {{"Let me check."},
                                  {"\n<tool_"},
                                  {"call>\n{\"name\": \"get_weather\", "},
                                  {"\"arguments\": {\"city\": \"Paris\"}}"},
                                  {"\n</tool_call>"}};

TEST(ToolReply, AHermesCallComesBackAsToolCalls) {
    Scripted s(kCall);
    const auto r = s.post(request(true, false));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json c = json::parse(r->body)["choices"][0];
    EXPECT_EQ(c["finish_reason"], "tool_calls");
    EXPECT_EQ(c["message"]["content"], "Let me check.");
    ASSERT_EQ(c["message"]["tool_calls"].size(), 1u);
    const json& call = c["message"]["tool_calls"][0];
    EXPECT_EQ(call["type"], "function");
    EXPECT_EQ(call["function"]["name"], "get_weather");
    EXPECT_EQ(json::parse(call["function"]["arguments"].get<std::string>()),
              json({{"city", "Paris"}}));
    EXPECT_TRUE(call["id"].get<std::string>().starts_with("call_"));

    // Without tools in the request, the same reply is text.
    const auto plain = s.post(request(false, false));
    ASSERT_TRUE(plain);
    const json p = json::parse(plain->body)["choices"][0];
    EXPECT_EQ(p["finish_reason"], "stop");
    EXPECT_FALSE(p["message"].contains("tool_calls"));
    EXPECT_NE(p["message"]["content"].get<std::string>().find("<tool_call>"), std::string::npos);
}

TEST(ToolReply, AStreamedCallSendsTheContentThenOneToolCallsDelta) {
    Scripted s(kCall);
    const auto r = s.post(request(true, true));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    std::string content, finish;
    std::vector<json> calls;
    for (const json& chunk : sse(r->body)) {
        for (const json& ch : chunk["choices"]) {
            const json& d = ch["delta"];
            if (d.contains("content") && d["content"].is_string()) content += d["content"];
            if (d.contains("tool_calls")) calls.push_back(d["tool_calls"]);
            if (ch["finish_reason"].is_string()) finish = ch["finish_reason"];
        }
    }
    EXPECT_EQ(content.find("<tool"), std::string::npos) << content;  // never streamed as text
    EXPECT_EQ(content.substr(0, 13), "Let me check.");
    ASSERT_EQ(calls.size(), 1u);
    ASSERT_EQ(calls[0].size(), 1u);
    EXPECT_EQ(calls[0][0]["index"], 0);
    EXPECT_EQ(calls[0][0]["function"]["name"], "get_weather");
    EXPECT_EQ(finish, "tool_calls");
}

TEST(ToolReply, ReasoningComesApartFromTheAnswer) {
    Scripted s({{"The user greets.", true}, {" Short.", true}, {"Hello"}, {" there!"}});
    const auto r = s.post(request(false, false));
    ASSERT_TRUE(r);
    const json m = json::parse(r->body)["choices"][0]["message"];
    EXPECT_EQ(m["reasoning_content"], "The user greets. Short.");
    EXPECT_EQ(m["content"], "Hello there!");

    const auto st = s.post(request(false, true));
    ASSERT_TRUE(st);
    std::string reasoning, content;
    for (const json& chunk : sse(st->body))
        for (const json& ch : chunk["choices"]) {
            const json& d = ch["delta"];
            if (d.contains("reasoning_content")) {
                EXPECT_TRUE(content.empty()) << "reasoning after the answer began";
                reasoning += d["reasoning_content"];
            }
            if (d.contains("content") && d["content"].is_string()) content += d["content"];
        }
    EXPECT_EQ(reasoning, "The user greets. Short.");
    EXPECT_EQ(content, "Hello there!");
}

}  // namespace
}  // namespace fluoro::app
