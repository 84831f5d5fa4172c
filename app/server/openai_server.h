// `fluoro serve`: an OpenAI-compatible HTTP server (POST /v1/chat/completions, streamed or not,
// and GET /v1/models) over one engine. As many generations run at once as the backend has slots
// (one, or --parallel with continuous batching), in arrival order as far as the wait allows;
// requests beyond them wait, up to max_queue of them (more get a 429). A request whose client goes
// away cancels its generation: the connection's socket is watched while the request waits and runs
// (server/http_listener.h, which also holds the deadlines and limits against slow or hostile
// clients).
//
// The server knows the engine only through CompletionBackend, so it lives in fluoro_app and tests
// run it in-process over a bare Engine; the CLI adapts its EngineDriver (which also saves runs to
// the session store with --save).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/batch_engine.h"
#include "runtime/engine_commands.h"
#include "sampling/sampling_params.h"
#include "server/http_listener.h"
#include "telemetry/events.h"

namespace fluoro::app {

struct CompletionBackend {
    // Runs the command to its end on the calling thread, calling on_event (on that thread) for
    // every event of the run, and returns its RunFinished (stop "error" with the message on
    // failure). `cancel` is the request's own flag, set when its client goes, its time is up or
    // the server stops; a backend whose runs are not concurrent may rely on cancel() instead.
    std::function<RunFinished(Complete, const std::function<void(const Event&)>& on_event,
                              const std::atomic<bool>& cancel)>
        run;
    // Stops the running generation (any thread); it then finishes with stop "cancelled". Only
    // for a backend of one slot (empty otherwise: the request's flag says it).
    std::function<void()> cancel;
    // Generations that may run at once: run() is called concurrently up to this many times
    // (continuous batching, runtime/batch_engine.h); 1: never concurrently.
    int parallel = 1;
    // A batching engine's load now, for /metrics (its KV usage, slots, steps); empty: the KV
    // usage comes from the runs' own memory events.
    std::function<BatchLoad()> batch_load;
};

// A BatchEngine as the server's backend: up to its `parallel` requests at once, each cancelled by
// its own flag, its load for /metrics. `tap` (optional) sees every event of every request before
// the server does, on the request's thread (the workbench records them).
CompletionBackend batch_backend(BatchEngine& engine,
                                std::function<void(const Event&)> tap = nullptr);

// One answered request, as the log line shows it.
struct RequestRecord {
    std::string method, path, remote;  // remote: the client's address
    int status = 0;
    double ms = 0;     // from routing to the last byte handed to the connection
    bool ran = false;  // a generation ran (the counts below are its)
    uint64_t run = 0;  // its run number (RunStarted::run; the Scheduler view's "#N")
    int64_t prompt = 0, cached = 0, completion = 0;
    std::string stop, cache_source;
};

// "POST /v1/chat/completions 200 prompt=.. cached=.. (source) completion=.. stop=.. 12.3 ms"
std::string format_request(const RequestRecord& r);

struct ServerOptions {
    std::string model_id = "model";  // GET /v1/models; the default "model" of responses
    // What GET /v1/models says of the model besides its id (the engine's ModelLoaded): its
    // context as vLLM's "max_model_len", and a llama-server-style "meta" block (architecture,
    // backend, KV type, threads, weight bytes, chat template). Empty path: only the id.
    ModelLoaded model_info;
    // Non-empty: every request needs "Authorization: Bearer KEY" (compared in constant time),
    // checked on the headers, before any body byte is read.
    std::string api_key;
    size_t max_body = size_t(1) << 20;  // bytes after chunked decoding; larger: 413
    int max_queue = 16;                 // requests waiting behind the running ones; more: 429
    // Connections, deadlines and write timeout (server/http_listener.h); max_body above wins
    // over http.max_body.
    HttpLimits http;
    // A request's max_tokens above this is lowered to it (finish_reason "length" tells the
    // client); 0: no cap. Requests that name none get the backend's default.
    int64_t max_tokens_cap = 4096;
    // From admission to the end of the reply, waiting included (0: none). A request still
    // waiting then gets a 503; a running generation is stopped and answered with what it has
    // (finish_reason "length").
    std::chrono::milliseconds request_timeout{std::chrono::minutes(10)};
    SamplingParams sampling;  // defaults that requests override
    bool log = true;          // one line per request on stderr
    // Called after each request on the thread that served it (never concurrently for one
    // request; requests on other threads may call it at the same time).
    std::function<void(const RequestRecord&)> on_request;
};

struct ServerCounters {
    int64_t completions = 0;  // completion requests that ran a generation
    int64_t cancelled = 0;    // generations stopped because the client went away
    int64_t rejected = 0;     // 4xx/5xx answers
    int64_t timed_out = 0;    // requests stopped by request_timeout
    HttpListenerCounters http;
};

class OpenAiServer {
  public:
    OpenAiServer(ServerOptions opt, CompletionBackend backend);
    ~OpenAiServer();  // stop()
    OpenAiServer(const OpenAiServer&) = delete;
    OpenAiServer& operator=(const OpenAiServer&) = delete;

    // Binds host:port (port 0: an ephemeral one; outside 0..65535: an error) and serves on a
    // thread of its own; returns the bound port. Throws fluoro::Error when it cannot bind. (The
    // public-address policy is the caller's: server/access.h check_bind.)
    int start(const std::string& host, int port);
    // Stops listening, lets running requests end, joins the thread. Idempotent.
    void stop();
    ServerCounters counters() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace fluoro::app
