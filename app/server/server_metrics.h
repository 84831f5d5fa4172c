// GET /metrics for `fluoro serve`: the Prometheus text exposition format (version 0.0.4), with
// vLLM's metric names (its V1 engine: docs.vllm.ai, "Production Metrics") wherever the meaning is
// the same, so a Grafana dashboard built for a vLLM fleet reads a Fluoroscope server unchanged.
// Every vllm: series carries the label model_name, as vLLM's do. What vLLM has no name for is
// `fluoro:`-prefixed. Histogram buckets are vLLM's.
//
// What each vLLM name means here:
//   num_requests_running / _waiting   requests generating (up to --parallel) / admitted and
//                                     waiting for a slot
//   kv_cache_usage_perc               the KV pool's used bytes over its allocated bytes (0..1):
//                                     the engine's live reading when it gives one (continuous
//                                     batching), else the generating sequence's as of its last
//                                     step
//   prefix_cache_queries / _hits      prompt tokens looked up / found cached (this conversation's
//                                     own KV or a prefix-cache entry), counted in tokens as vLLM
//   time_to_first_token_seconds       request arrival (admission) to the first token
//   inter_token_latency_seconds       each gap between two tokens of a reply
//   e2e_request_latency_seconds       arrival to the last token; request_queue_time_seconds:
//                                     arrival to the start of its generation; prefill / decode:
//                                     the engine's own prefill and decode times
//   spec_decode_num_draft_tokens / num_accepted_tokens   drafted / accepted tokens
//   fluoro:batch_slots, batch_steps, batch_step_tokens   continuous batching (--parallel N > 1
//                                     only): the slots, the forward steps so far and the tokens
//                                     they computed (their ratio: the mean batch)
//   request_success{finished_reason}  stop (end of generation or stop string), length
//                                     (max_tokens, context full), abort (cancelled: the client
//                                     went away or --request-timeout stopped it)
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/batch_engine.h"
#include "server/http_listener.h"
#include "telemetry/events.h"

namespace fluoro::app {

class ServerMetrics {
  public:
    using Clock = std::chrono::steady_clock;
    explicit ServerMetrics(std::string model_name);

    // One generation's timing state: the caller keeps it from run_started to run_finished
    // (generations may overlap: continuous batching).
    struct RunClock {
        Clock::time_point arrival{}, last_token{};
        bool first_token_seen = false;
    };
    // A generation begins for a request admitted at `arrival`; the events of the run follow.
    RunClock run_started(Clock::time_point arrival, Clock::time_point now = Clock::now());
    void event(const Event& e, RunClock& run, Clock::time_point now = Clock::now());
    void run_finished(const RunFinished& f, RunClock& run, Clock::time_point now = Clock::now());

    // The server's own counts, read when /metrics is asked for.
    struct Snapshot {
        int64_t waiting = 0;             // admitted and not yet holding the engine
        std::optional<BatchLoad> batch;  // a batching engine's load (its KV usage wins)
        int64_t cancelled = 0, rejected = 0, timed_out = 0;
        HttpListenerCounters http;
    };
    std::string exposition(const Snapshot& s) const;

  private:
    struct Histogram {
        std::vector<double> bounds;     // upper bounds, ascending; +Inf implied
        std::vector<uint64_t> buckets;  // per bound (not cumulative), plus +Inf last
        double sum = 0;
        uint64_t count = 0;
        explicit Histogram(std::vector<double> b);
        void observe(double v);
    };

    std::string model_;
    mutable std::mutex mu_;
    int64_t running_ = 0;
    double kv_usage_ = 0;
    uint64_t prompt_tokens_ = 0, generation_tokens_ = 0, cache_queries_ = 0, cache_hits_ = 0;
    uint64_t draft_tokens_ = 0, accepted_tokens_ = 0, errors_ = 0;
    uint64_t success_stop_ = 0, success_length_ = 0, success_abort_ = 0;
    Histogram ttft_, itl_, e2e_, queue_, prefill_, decode_, req_prompt_, req_generation_;
};

}  // namespace fluoro::app
