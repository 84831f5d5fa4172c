// Prometheus' text exposition format (what a server's GET /metrics answers: vLLM, SGLang,
// llama-server, fluoro serve), parsed into samples, and the few server-level figures Fluoroscope
// shows for a remote engine, by vLLM's metric names.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fluoro::app {

struct MetricSample {
    std::string name;  // as exposed: a counter's sample ends in _total, a histogram's in _bucket...
    std::vector<std::pair<std::string, std::string>> labels;
    double value = 0;
    std::string label(std::string_view key) const;  // "" when absent
};

struct Exposition {
    std::vector<MetricSample> samples;
    std::map<std::string, std::string> types;  // family name -> counter, gauge, histogram, ...
    // The sum over every label set of `name`'s samples, or of `name` + "_total" (a counter's
    // sample); nullopt when the server exposes neither.
    std::optional<double> sum(std::string_view name) const;
};

// Parses the text format: # HELP / # TYPE lines, samples `name{label="value",...} value
// [timestamp]` with the format's escapes (\\, \", \n) and +Inf/-Inf/NaN. Throws Error naming the
// line (1-based) and what is wrong with it.
Exposition parse_prometheus_text(std::string_view text);

// What a remote server's /metrics says of its load: requests running and waiting, KV cache usage
// (0..1), prefix-cache queries and hits (in tokens), prompt and generated tokens, speculative
// draft tokens and accepted ones. Read by vLLM's
// names (which fluoro serve uses too; vLLM's pre-0.10 gpu_cache_usage_perc as well), else
// SGLang's (num_running_reqs, num_queue_reqs, token_usage, cached_tokens of prompt_tokens,
// generation_tokens), else llama-server's (requests_processing, requests_deferred,
// prompt_tokens, tokens_predicted; it has no KV or prefix-cache counter). A field the server does
// not expose stays nullopt; `names` says whose names were found ("vllm", "sglang", "llamacpp",
// or "" for none).
struct ServerLoad {
    std::optional<double> running, waiting, kv_usage, prefix_queries, prefix_hits, prompt_tokens,
        generation_tokens;
    // Speculative decoding's draft tokens proposed and accepted (vLLM's names only).
    std::optional<double> spec_draft_tokens, spec_accepted_tokens;
    std::string names;
};
ServerLoad server_load(const Exposition& e);

// "running 1, waiting 0, KV cache 3.2 % used, prefix cache 10/12 hits (+1/+1), tokens +37 prompt
// +16 generated": after against before (the deltas of the counters); "-" for what is missing.
std::string server_load_line(const ServerLoad& before, const ServerLoad& after);

}  // namespace fluoro::app
