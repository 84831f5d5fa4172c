// The /metrics exposition on fixed times: each observation in the bucket its value belongs to
// (le: value <= bound), buckets cumulative, label values escaped, finish reasons by label.
#include "server/server_metrics.h"

#include <gtest/gtest.h>

#include <string>

namespace fluoro::app {
namespace {

using namespace std::chrono_literals;
using Clock = ServerMetrics::Clock;

TokenEvent token() {
    TokenEvent t;
    t.id = 1;
    return t;
}

bool has_line(const std::string& text, const std::string& line) {
    return text.find('\n' + line + '\n') != std::string::npos;
}

TEST(ServerMetrics, ObservationsLandInTheirBucketsAndCountersAddUp) {
    ServerMetrics m("m");
    const Clock::time_point t0{};
    // Arrived at t0, waited 0.3 s (exactly a bound: le="0.3" holds it), first token at 0.35 s,
    // then tokens 20 ms and 30 ms apart.
    ServerMetrics::RunClock run = m.run_started(t0, t0 + 300ms);
    MemoryCounters mem;
    mem.kv_bytes = 1000;
    mem.kv_used_bytes = 250;
    m.event(mem, run, t0 + 310ms);
    m.event(token(), run, t0 + 350ms);
    m.event(token(), run, t0 + 370ms);
    m.event(token(), run, t0 + 400ms);
    ServerMetrics::Snapshot s;
    s.waiting = 2;  // two besides the one generating
    const std::string during = m.exposition(s);
    EXPECT_TRUE(has_line(during, "vllm:num_requests_running{model_name=\"m\"} 1")) << during;
    EXPECT_TRUE(has_line(during, "vllm:num_requests_waiting{model_name=\"m\"} 2")) << during;
    EXPECT_TRUE(has_line(during, "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.25")) << during;

    RunFinished f;
    f.stop = "max_tokens";
    f.prompt_tokens = 7;
    f.cached_tokens = 4;
    f.n_tokens = 3;
    f.prefill_ms = 12;
    f.decode_ms = 50;
    m.run_finished(f, run, t0 + 400ms);
    const std::string text = m.exposition({});
    const auto line = [&](const std::string& l) {
        EXPECT_TRUE(has_line(text, l)) << "missing: " << l << "\n" << text;
    };
    line("vllm:num_requests_running{model_name=\"m\"} 0");
    line("vllm:prompt_tokens_total{model_name=\"m\"} 7");
    line("vllm:generation_tokens_total{model_name=\"m\"} 3");
    line("vllm:prefix_cache_queries_total{model_name=\"m\"} 7");
    line("vllm:prefix_cache_hits_total{model_name=\"m\"} 4");
    line("vllm:request_success_total{model_name=\"m\",finished_reason=\"length\"} 1");
    line("vllm:request_success_total{model_name=\"m\",finished_reason=\"stop\"} 0");
    // TTFT 0.35 s: not in le=0.25, in le=0.5.
    line("vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.25\"} 0");
    line("vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.5\"} 1");
    // Gaps 0.02 and 0.03 s: le=0.025 holds one, le=0.05 both.
    line("vllm:inter_token_latency_seconds_bucket{model_name=\"m\",le=\"0.01\"} 0");
    line("vllm:inter_token_latency_seconds_bucket{model_name=\"m\",le=\"0.025\"} 1");
    line("vllm:inter_token_latency_seconds_bucket{model_name=\"m\",le=\"0.05\"} 2");
    line("vllm:inter_token_latency_seconds_count{model_name=\"m\"} 2");
    line("vllm:request_queue_time_seconds_bucket{model_name=\"m\",le=\"0.3\"} 1");
    line("vllm:e2e_request_latency_seconds_bucket{model_name=\"m\",le=\"0.3\"} 0");
    line("vllm:e2e_request_latency_seconds_bucket{model_name=\"m\",le=\"0.5\"} 1");
    line("vllm:e2e_request_latency_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 1");
    line("vllm:request_prompt_tokens_bucket{model_name=\"m\",le=\"5\"} 0");
    line("vllm:request_prompt_tokens_bucket{model_name=\"m\",le=\"10\"} 1");
    line("vllm:request_prompt_tokens_sum{model_name=\"m\"} 7");
}

TEST(ServerMetrics, ErrorsAreNotSuccessesAndLabelValuesAreEscaped) {
    ServerMetrics m("a \"quoted\" \\ name\nwith a newline");
    ServerMetrics::RunClock run = m.run_started(Clock::now());
    RunFinished f;
    f.stop = "error";
    f.prompt_tokens = 5;
    m.run_finished(f, run);
    const std::string text = m.exposition({});
    const std::string label = "model_name=\"a \\\"quoted\\\" \\\\ name\\nwith a newline\"";
    EXPECT_TRUE(has_line(text, "fluoro:request_errors_total{" + label + "} 1")) << text;
    EXPECT_TRUE(has_line(text, "vllm:prompt_tokens_total{" + label + "} 0")) << text;
    EXPECT_TRUE(has_line(text, "vllm:e2e_request_latency_seconds_count{" + label + "} 0")) << text;
}

TEST(ServerMetrics, OverlappingRunsAreCountedAndTimedApart) {
    // Continuous batching: two generations at once, each with its own clock.
    ServerMetrics m("m");
    const Clock::time_point t0{};
    ServerMetrics::RunClock a = m.run_started(t0, t0 + 10ms);
    ServerMetrics::RunClock b = m.run_started(t0 + 5ms, t0 + 20ms);
    m.event(token(), a, t0 + 100ms);  // a's TTFT 0.1 s
    m.event(token(), b, t0 + 605ms);  // b's TTFT 0.6 s
    m.event(token(), a, t0 + 700ms);  // a's gap 0.6 s (not measured from b's token)
    ServerMetrics::Snapshot s;
    BatchLoad load;  // the batching engine's live reading wins
    load.kv_bytes = 1000;
    load.kv_used_bytes = 500;
    load.n_slots = 4;
    load.steps = 10;
    load.step_tokens = 25;
    s.batch = load;
    const std::string during = m.exposition(s);
    EXPECT_TRUE(has_line(during, "vllm:num_requests_running{model_name=\"m\"} 2")) << during;
    EXPECT_TRUE(has_line(during, "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.5")) << during;
    EXPECT_TRUE(has_line(during, "fluoro:batch_slots{model_name=\"m\"} 4")) << during;
    EXPECT_TRUE(has_line(during, "fluoro:batch_steps_total{model_name=\"m\"} 10")) << during;
    EXPECT_TRUE(has_line(during, "fluoro:batch_step_tokens_total{model_name=\"m\"} 25")) << during;
    EXPECT_TRUE(
        has_line(during, "vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.5\"} 1"))
        << during;
    EXPECT_TRUE(
        has_line(during, "vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"0.75\"} 2"))
        << during;
    EXPECT_TRUE(
        has_line(during, "vllm:inter_token_latency_seconds_bucket{model_name=\"m\",le=\"0.5\"} 0"))
        << during;
    RunFinished f;
    f.stop = "eog";
    m.run_finished(f, a, t0 + 700ms);
    EXPECT_TRUE(has_line(m.exposition({}), "vllm:num_requests_running{model_name=\"m\"} 1"));
    m.run_finished(f, b, t0 + 700ms);
    EXPECT_TRUE(has_line(m.exposition({}), "vllm:num_requests_running{model_name=\"m\"} 0"));
}

}  // namespace
}  // namespace fluoro::app
