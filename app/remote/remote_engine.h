// A window's chat with a remote OpenAI-compatible server (vLLM, SGLang, llama-server,
// llama-cpp-python, Ollama, another `fluoro serve`) spoken in the Engine's vocabulary: it takes
// the window's commands (runtime/engine_commands.h) and answers with the Engine's telemetry events
// (telemetry/events.h), so the chat, the token inspector, the step timeline, the store and the
// exports treat a remote run like a local one. What a remote engine shows from outside:
//
// - the conversation is kept here and sent whole with every turn (the API is stateless);
// - each streamed chunk's arrival time: a TokenEvent per token the chunk's logprobs list (one per
//   chunk without logprobs: no probabilities, id -1), a decode StepEvent per chunk after the
//   first (from the previous chunk's arrival to this one's), and a prefill StepEvent from the
//   request to the first chunk (queueing, prefill and the network: time to first token as the
//   client sees it) with the prompt tokens the server's usage counts;
// - top_logprobs as the tokens' alternatives. Token ids are this engine's numbering of the token
//   texts the server sent (the same text, the same id, for one attachment), not the server's
//   vocabulary; top_text holds the texts;
// - the server's GET /metrics before and after each run (ServerLoadEvent: requests, KV cache
//   usage, prefix-cache and speculative counters by vLLM's names; remote/prometheus_text.h);
// - the run's settings: what was sent (temperature, top_p, seed, max_tokens, the system prompt,
//   top_logprobs = sampling.n_probs); top_k, min_p and the penalties are the server's (recorded
//   as off). Attention capture, KV policies, speculative settings, the logit lens and the
//   attention overview need the local engine: a lens or overview request is answered with its
//   error, capture and model-side settings are left to the local engine.
//
// Threads: public methods from any thread; commands run in order on the engine's own thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "remote/remote_chat.h"
#include "runtime/command_queue.h"
#include "runtime/engine_commands.h"
#include "telemetry/event_stream.h"

namespace fluoro::app {

struct RemoteAttach {
    std::string url;    // "http[s]://host:port[/v1]" (parse_endpoint)
    std::string model;  // the served model's id; empty: the first GET /v1/models lists
    // The server's API key, read from the environment when attaching (never stored).
    std::string api_key_env = "OPENAI_API_KEY";
    bool scrape_metrics = true;  // read GET /metrics around each run (when the server has one)
    std::chrono::seconds timeout{600};
    std::string ca_file;  // https: PEM CA certificates to trust instead of the system's
};

// The window's line for a server's load: "server (vllm names): running 1 · waiting 0 · KV cache
// 3.2 % · prefix cache 900/1200 tokens hit · spec 52/80 accepted", with " (this run +10/+12)"
// after the prefix and speculative counts when `before` (the same run's earlier reading) is given;
// what the server does not expose is left out.
std::string server_load_summary(const ServerLoadEvent& now,
                                const ServerLoadEvent* before = nullptr);

class RemoteEngine {
  public:
    // Throws Error for a URL parse_endpoint refuses. The connection is made by the attach,
    // which runs first on the engine's thread and answers ModelLoaded (path: the endpoint's URL,
    // name: the model id, arch and backend "remote"), or an ErrorEvent for command
    // "load_model" when the server cannot be reached or lists no model.
    explicit RemoteEngine(RemoteAttach a);
    // Cancels the request in flight (the attach and /metrics reads too), drops queued commands,
    // joins: returns within ~50 ms even when the server never answers.
    ~RemoteEngine();
    RemoteEngine(const RemoteEngine&) = delete;
    RemoteEngine& operator=(const RemoteEngine&) = delete;

    EventStream& events() { return events_; }
    const RemoteEndpoint& endpoint() const { return endpoint_; }
    // Run, conversation and submission numbers start above kIdBase, apart from those of a local
    // Engine whose events a consumer sees beside these (the window's API server).
    static constexpr uint64_t kIdBase = uint64_t(1) << 40;
    // As Engine::submit: the submission number. LoadModel and UnloadModel are refused (a
    // window detaches by destroying this engine), Complete too (the window's API server serves
    // the local engine).
    uint64_t submit(Command c);
    uint64_t submit_tagged(std::string tag, Command c);
    // As Engine::cancel: stops the request in flight (its connection is closed; it finishes
    // with stop "cancelled", keeping what arrived) and the generations already queued.
    void cancel();

  private:
    struct State;
    void loop();
    void execute(const QueuedCommand& q);
    void attach();
    void generate(RunKind kind, int64_t kept, std::string user_text, uint64_t submission);
    // The server's /metrics now; nullopt when the read failed (said once, then no more reads)
    // or the run was cancelled.
    std::optional<ServerLoadEvent> scrape(uint64_t run, int64_t t_ns);
    int32_t token_id(const std::string& text);  // this attachment's number for a token text
    int64_t now_ns() const;

    RemoteAttach opt_;
    RemoteEndpoint endpoint_;
    std::string api_key_;
    EventStream events_;
    CommandQueue queue_;
    std::mutex cancel_mu_;
    uint64_t cancel_upto_ = 0;
    std::atomic<bool> cancel_flag_{false};
    std::unique_ptr<State> state_;
    std::chrono::steady_clock::time_point started_;
    std::thread thread_;  // last
};

}  // namespace fluoro::app
