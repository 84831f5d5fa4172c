// The Prometheus text parser on an exposition shaped like vLLM's documented one (counters with
// _total samples, a histogram, labels with escapes, +Inf), on fluoro serve's own /metrics (the
// round trip of ServerMetrics), and on broken text (the line named); the server load read by
// vLLM's, SGLang's and llama-server's names; and the line `fluoro run --remote --metrics` prints.
#include "remote/prometheus_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.h"
#include "server/server_metrics.h"

namespace fluoro::app {
namespace {

// After vLLM's metrics page (docs.vllm.ai, "Metrics"): the names and kinds its V1 engine exposes.
constexpr const char* kVllmLike =
    R"(# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0421
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1200.0
# TYPE vllm:prefix_cache_hits counter
vllm:prefix_cache_hits_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 900.0
# TYPE vllm:prompt_tokens counter
vllm:prompt_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1500.0
# TYPE vllm:generation_tokens counter
vllm:generation_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 640.0
vllm:generation_tokens_total{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 360.0
# TYPE vllm:spec_decode_num_draft_tokens counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 80.0
# TYPE vllm:spec_decode_num_accepted_tokens counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 52.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.001",model_name="m"} 0.0
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 7.0
vllm:time_to_first_token_seconds_sum{model_name="m"} 1.75
vllm:time_to_first_token_seconds_count{model_name="m"} 7.0
  # indented comments and blank lines are allowed

weird_label{path="C:\\dir",quote="say \"hi\"",nl="a\nb"} -Inf 1700000000000
)";

TEST(PrometheusText, ReadsAVllmShapedExposition) {
    const Exposition e = parse_prometheus_text(kVllmLike);
    EXPECT_EQ(e.types.at("vllm:prefix_cache_hits"), "counter");
    EXPECT_EQ(e.types.at("vllm:time_to_first_token_seconds"), "histogram");
    EXPECT_EQ(e.sum("vllm:num_requests_running"), 3.0);
    EXPECT_EQ(e.sum("vllm:generation_tokens"), 1000.0);  // the _total samples of two engines
    EXPECT_EQ(e.sum("vllm:time_to_first_token_seconds_count"), 7.0);
    EXPECT_FALSE(e.sum("sglang:num_running_reqs"));
    const MetricSample& w = e.samples.back();
    EXPECT_EQ(w.name, "weird_label");
    EXPECT_EQ(w.label("path"), "C:\\dir");
    EXPECT_EQ(w.label("quote"), "say \"hi\"");
    EXPECT_EQ(w.label("nl"), "a\nb");
    EXPECT_TRUE(std::isinf(w.value) && w.value < 0);
    bool inf_bucket = false;
    for (const MetricSample& s : e.samples)
        if (s.name == "vllm:time_to_first_token_seconds_bucket" && s.label("le") == "+Inf")
            inf_bucket = s.value == 7.0;
    EXPECT_TRUE(inf_bucket);

    const ServerLoad l = server_load(e);
    EXPECT_EQ(l.running, 3.0);
    EXPECT_EQ(l.waiting, 1.0);
    EXPECT_EQ(l.kv_usage, 0.0421);
    EXPECT_EQ(l.prefix_queries, 1200.0);
    EXPECT_EQ(l.prefix_hits, 900.0);
    EXPECT_EQ(l.prompt_tokens, 1500.0);
    EXPECT_EQ(l.generation_tokens, 1000.0);
    EXPECT_EQ(l.spec_draft_tokens, 80.0);
    EXPECT_EQ(l.spec_accepted_tokens, 52.0);
    ServerLoad before = l;
    before.prefix_hits = 890;
    before.prefix_queries = 1188;
    before.prompt_tokens = 1476;
    before.generation_tokens = 984;
    EXPECT_EQ(server_load_line(before, l),
              "server (vllm names): running 3, waiting 1, KV cache 4.2 % used, prefix cache "
              "900/1200 hits (+10/+12), tokens +24 prompt +16 generated");
    EXPECT_EQ(server_load_line(ServerLoad{}, ServerLoad{}),
              "server (no known metric names): running -, waiting -, KV cache -, prefix cache "
              "-/- hits (-/-), tokens - prompt - generated");
}

// vLLM before 0.10 named the KV gauge gpu_cache_usage_perc.
TEST(PrometheusText, OlderVllmKvGaugeIsRead) {
    EXPECT_EQ(server_load(parse_prometheus_text("vllm:num_requests_running 0\n"
                                                "vllm:gpu_cache_usage_perc 0.5\n"))
                  .kv_usage,
              0.5);
}

// SGLang's names, after its production-metrics docs (launched with --enable-metrics).
TEST(PrometheusText, SglangNamesAreRead) {
    const ServerLoad l = server_load(parse_prometheus_text(
        "# TYPE sglang:prompt_tokens_total counter\n"
        "sglang:prompt_tokens_total{model_name=\"q\"} 8.128902e+06\n"
        "sglang:generation_tokens_total{model_name=\"q\"} 7.557572e+06\n"
        "sglang:cached_tokens_total{model_name=\"q\",cache_source=\"device\"} 1.0e+06\n"
        "sglang:cached_tokens_total{model_name=\"q\",cache_source=\"host\"} 2.5e+05\n"
        "sglang:token_usage{model_name=\"q\"} 0.28\n"
        "sglang:cache_hit_rate{model_name=\"q\"} 0.0075\n"
        "sglang:num_running_reqs{model_name=\"q\"} 8\n"
        "sglang:num_queue_reqs{model_name=\"q\"} 4\n"));
    EXPECT_EQ(l.names, "sglang");
    EXPECT_EQ(l.running, 8.0);
    EXPECT_EQ(l.waiting, 4.0);
    EXPECT_EQ(l.kv_usage, 0.28);
    EXPECT_EQ(l.prompt_tokens, 8.128902e+06);
    EXPECT_EQ(l.prefix_queries, 8.128902e+06);
    EXPECT_EQ(l.prefix_hits, 1.25e+06);  // every cache source
    EXPECT_EQ(l.generation_tokens, 7.557572e+06);
}

// llama-server's (--metrics): no KV or prefix-cache figure, which stays unknown.
TEST(PrometheusText, LlamaServerNamesAreRead) {
    const ServerLoad l =
        server_load(parse_prometheus_text("# TYPE llamacpp:prompt_tokens_total counter\n"
                                          "llamacpp:prompt_tokens_total 1200\n"
                                          "llamacpp:tokens_predicted_total 39080\n"
                                          "llamacpp:requests_processing 1\n"
                                          "llamacpp:requests_deferred 4\n"));
    EXPECT_EQ(l.names, "llamacpp");
    EXPECT_EQ(l.running, 1.0);
    EXPECT_EQ(l.waiting, 4.0);
    EXPECT_EQ(l.prompt_tokens, 1200.0);
    EXPECT_EQ(l.generation_tokens, 39080.0);
    EXPECT_FALSE(l.kv_usage || l.prefix_hits || l.prefix_queries);
}

TEST(PrometheusText, FluoroServesOwnExpositionReadsBack) {
    ServerMetrics m("model \"x\"");
    ServerMetrics::Snapshot s;
    s.waiting = 2;
    const ServerLoad l = server_load(parse_prometheus_text(m.exposition(s)));
    EXPECT_EQ(l.running, 0.0);
    EXPECT_EQ(l.waiting, 2.0);
    EXPECT_TRUE(l.kv_usage && l.prefix_queries && l.prefix_hits && l.prompt_tokens &&
                l.generation_tokens && l.spec_draft_tokens && l.spec_accepted_tokens);
}

TEST(PrometheusText, BrokenTextNamesTheLine) {
    for (const auto& [text, line, what] :
         {std::tuple{"ok 1\n{bad} 2\n", 2, "metric name"},
          std::tuple{"a{x=1} 2\n", 1, "name=\"value\""},
          std::tuple{"a{x=\"1} 2\n", 1, "not closed"},
          std::tuple{"a{x=\"1\" y=\"2\"} 2\n", 1, "commas"}, std::tuple{"a\n", 1, "needs a value"},
          std::tuple{"# TYPE a\n", 1, "without a type"},
          std::tuple{"\n\na 1.5x\n", 3, "not a number"}}) {
        try {
            (void)parse_prometheus_text(text);
            ADD_FAILURE() << text << " accepted";
        } catch (const Error& e) {
            const std::string m = e.what();
            EXPECT_NE(m.find("line " + std::to_string(line) + ":"), std::string::npos) << m;
            EXPECT_NE(m.find(what), std::string::npos) << m;
        }
    }
}

}  // namespace
}  // namespace fluoro::app
