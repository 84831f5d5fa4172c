// The remote client's pieces that need no server: URLs as users type them, and OpenAI event
// streams read however the network cuts them (the end-to-end run against `fluoro serve` is
// tests/server/remote_run_test.py).
#include "remote/remote_chat.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace fluoro::app {
namespace {

TEST(RemoteEndpoint, UrlsAsUsersTypeThem) {
    const RemoteEndpoint a = parse_endpoint("http://gpu-node-3:8000");
    EXPECT_EQ(a.host, "gpu-node-3");
    EXPECT_EQ(a.port, 8000);
    EXPECT_EQ(a.base_path, "/v1");
    EXPECT_EQ(a.url(), "http://gpu-node-3:8000/v1");
    const RemoteEndpoint b = parse_endpoint("127.0.0.1:30000/v1/");
    EXPECT_EQ(b.host, "127.0.0.1");
    EXPECT_EQ(b.port, 30000);
    EXPECT_EQ(b.base_path, "/v1");
    const RemoteEndpoint c = parse_endpoint("http://proxy/openai/v1");
    EXPECT_EQ(c.port, 80);
    EXPECT_EQ(c.base_path, "/openai/v1");
    const RemoteEndpoint d = parse_endpoint("https://api.example.com/v1");
    EXPECT_TRUE(d.tls);
    EXPECT_EQ(d.port, 443);
    EXPECT_EQ(d.url(), "https://api.example.com:443/v1");
    EXPECT_FALSE(a.tls);
    for (const char* bad : {"ftp://h", "http://:80", "https://:443", "http://h:0", "http://h:x",
                            "http://h:70000", ""}) {
        try {
            (void)parse_endpoint(bad);
            ADD_FAILURE() << bad << " accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("remote URL"), std::string::npos) << e.what();
        }
    }
}

// A stream as vLLM and fluoro serve send it: a role chunk, content chunks (one with logprobs),
// a finish chunk, the usage chunk, [DONE] — cut into pieces of every size from 1 byte up.
TEST(ChatStreamReader, ReadsTheStreamHoweverItIsCut) {
    const std::string stream =
        "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":"
        "\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n"
        "data: {\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Par\"},"
        "\"logprobs\":{\"content\":[{\"token\":\"Par\",\"logprob\":-0.5,\"top_logprobs\":[]}]},"
        "\"finish_reason\":null}]}\r\n\r\n"
        ": a comment line servers may send\n"
        "data: {\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"is\"},"
        "\"finish_reason\":null}]}\n\n"
        "data: {\"model\":\"m\",\"choices\":[{\"index\":1,\"delta\":{\"content\":\"other\"},"
        "\"finish_reason\":null}]}\n\n"
        "data: {\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":"
        "\"stop\"}]}\n\n"
        "data: {\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,"
        "\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":10}}}\n\n"
        "data: [DONE]\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"after done\"}}]}\n\n";
    for (size_t cut = 1; cut <= stream.size(); cut = cut < 8 ? cut + 1 : cut * 2) {
        RemoteResult r;
        int seen = 0;
        ChatStreamReader reader(r, [&](const RemoteChunk&) { ++seen; });
        bool more = true;
        double t = 0;
        for (size_t at = 0; at < stream.size() && more; at += cut, t += 1)
            more = reader.feed(std::string_view(stream).substr(at, cut), t);
        EXPECT_FALSE(more) << cut;
        EXPECT_TRUE(reader.done()) << cut;
        EXPECT_EQ(r.text, "Paris") << cut;  // index 1 is another choice's; nothing after [DONE]
        EXPECT_EQ(seen, 2) << cut;
        ASSERT_EQ(r.chunks.size(), 2u) << cut;
        EXPECT_EQ(r.chunks[0].logprobs.size(), 1u);
        EXPECT_EQ(r.chunks[0].logprobs[0]["token"], "Par");
        EXPECT_LE(r.chunks[0].t_ms, r.chunks[1].t_ms);
        EXPECT_EQ(r.ttft_ms, r.chunks[0].t_ms);
        EXPECT_EQ(r.finish_reason, "stop");
        EXPECT_EQ(r.model, "m");
        EXPECT_EQ(r.prompt_tokens, 12);
        EXPECT_EQ(r.completion_tokens, 2);
        EXPECT_EQ(r.cached_tokens, 10);
    }
}

TEST(ChatStreamReader, ErrorsInTheStreamAreThrownWithTheirText) {
    const auto throws = [](const std::string& s, const std::string& expect) {
        RemoteResult r;
        ChatStreamReader reader(r, {});
        try {
            reader.feed(s, 0);
            ADD_FAILURE() << s << " accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
        }
    };
    // fluoro serve and vLLM report a failure mid-stream as an error object.
    throws("data: {\"error\":{\"message\":\"prompt is too long\",\"type\":\"x\"}}\n",
           "prompt is too long");
    throws("data: {\"object\":\"error\",\"error\":\"overloaded\"}\n", "overloaded");
    throws("data: <html>bad gateway</html>\n", "not JSON: <html>bad gateway</html>");
    throws("data: {\"id\":\"x\"}\n", "without choices");
}

TEST(RemoteResult, TheStatsLineSaysWhatTheServerCountedAndWhatArrived) {
    RemoteResult r;
    r.model = "llama-3-8b";
    r.prompt_tokens = 30;
    r.cached_tokens = 16;
    r.completion_tokens = 5;
    r.finish_reason = "length";
    for (double t : {100.0, 110.0, 120.0, 130.0, 180.0}) r.chunks.push_back({"x", t, {}});
    r.ttft_ms = 100;
    const std::string line = remote_stats_line(parse_endpoint("http://h:8000"), r);
    for (const char* part :
         {"http://h:8000/v1 llama-3-8b", "prompt 30 (16 cached), generated 5", "TTFT 100.0 ms",
          "5 chunks, interval median 10.0 ms", "max 50.0 ms", "50.0 tok/s", "finish length"})
        EXPECT_NE(line.find(part), std::string::npos) << part << " in " << line;
}

}  // namespace
}  // namespace fluoro::app
