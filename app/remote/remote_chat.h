// A chat completion streamed from any OpenAI-compatible server — vLLM, SGLang, llama-server,
// Ollama or another `fluoro serve` — with each chunk's arrival time: what `fluoro run --remote`
// prints, and the timing a remote engine shows from outside (time to first token, the intervals
// between chunks, the server's own usage). HTTP/1.1 over TCP, or over TLS for an https URL (the
// server's certificate checked against the system's CA certificates, or a CA file given, and
// against the host name or IP address in the URL).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fluoro::app {

struct RemoteEndpoint {
    std::string host;
    int port = 80;          // 443 for https unless the URL names another
    bool tls = false;       // https
    std::string ca_file;    // PEM certificates to trust for https; empty: the system's
    std::string base_path;  // the API's root, "/v1" unless the URL names another
    std::string url() const;
};
// "http[s]://host[:port][/path]" (a bare "host:port" reads as http); the path defaults to /v1.
// Throws Error naming the URL for another scheme, a missing host or a bad port.
RemoteEndpoint parse_endpoint(std::string_view url);

struct RemoteRequest {
    std::string model;  // the served model's name (vLLM and SGLang require it)
    std::vector<std::pair<std::string, std::string>> messages;  // (role, content)
    int64_t max_tokens = 512;
    std::optional<double> temperature, top_p;
    std::optional<uint64_t> seed;
    int top_logprobs = 0;  // > 0: ask for logprobs with that many alternatives
    std::string api_key;   // sent as a Bearer token when set; never stored
    std::chrono::seconds timeout{600};
    // Set from any thread: the request stops within ~50 ms, its connection closed (a server
    // that watches its clients stops generating), and stream_chat returns what arrived with
    // cancelled set. Null: never.
    const std::atomic<bool>* cancel = nullptr;
};

// One content chunk as it arrived.
struct RemoteChunk {
    std::string text;
    double t_ms = 0;                                    // since the request was sent
    nlohmann::json logprobs = nlohmann::json::array();  // the chunk's logprobs.content entries
};

struct RemoteResult {
    std::string text, finish_reason, model;
    std::vector<RemoteChunk> chunks;
    // From the server's usage (stream_options.include_usage); -1 where it sent none.
    int64_t prompt_tokens = -1, completion_tokens = -1, cached_tokens = -1;
    double ttft_ms = -1;     // the first content chunk's arrival (-1: no content)
    double total_ms = 0;     // until the stream ended
    bool cancelled = false;  // RemoteRequest::cancel stopped it
    // Intervals between consecutive content chunks, in order.
    std::vector<double> intervals_ms() const;
};

// GET `path` on the endpoint's host (for a server's /metrics: path "/metrics", at the root, not
// under the API's path); the body. Throws Error like stream_chat, for a status other than 200,
// and within ~50 ms of `cancel` being set (saying "cancelled").
std::string fetch_text(const RemoteEndpoint& endpoint, const std::string& path,
                       const std::string& api_key = {},
                       std::chrono::seconds timeout = std::chrono::seconds(30),
                       const std::atomic<bool>* cancel = nullptr);

// The ids GET base_path/models lists (OpenAI's {"data": [{"id"}]}), in its order. Throws Error
// like fetch_text, and for a body that is not such a list.
std::vector<std::string> list_models(const RemoteEndpoint& endpoint,
                                     const std::string& api_key = {},
                                     std::chrono::seconds timeout = std::chrono::seconds(30),
                                     const std::atomic<bool>* cancel = nullptr);

// One line for stderr after a remote answer: the endpoint and model, the prompt tokens (cached)
// and generated ones as the server counted them, time to first token, the chunks' intervals
// (median, 90th percentile, max) and the generation rate after the first token.
std::string remote_stats_line(const RemoteEndpoint& endpoint, const RemoteResult& r);

// Sends req to endpoint (POST base_path/chat/completions, streamed, usage included) and reads the
// stream; on_chunk sees each content chunk as it arrives. Throws Error naming the endpoint when it
// cannot connect, answers with an HTTP error (the server's message quoted), times out, or sends a
// stream that is not OpenAI's (the offending line quoted).
RemoteResult stream_chat(const RemoteEndpoint& endpoint, const RemoteRequest& req,
                         const std::function<void(const RemoteChunk&)>& on_chunk = {});

// Feeds an OpenAI chat-completion event stream piece by piece into a RemoteResult (what
// stream_chat does with the body it reads; apart for tests). feed() returns false once
// "data: [DONE]" arrived; it throws Error for a data line that is not a chunk object.
class ChatStreamReader {
  public:
    ChatStreamReader(RemoteResult& out, std::function<void(const RemoteChunk&)> on_chunk)
        : out_(out), on_chunk_(std::move(on_chunk)) {}
    bool feed(std::string_view bytes, double t_ms);
    bool done() const { return done_; }

  private:
    void line(std::string_view l, double t_ms);
    RemoteResult& out_;
    std::function<void(const RemoteChunk&)> on_chunk_;
    std::string pending_;
    bool done_ = false;
};

}  // namespace fluoro::app
