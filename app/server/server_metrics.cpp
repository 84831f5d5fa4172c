#include "server/server_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace fluoro::app {

namespace {

// vLLM V1's bucket bounds (vllm/v1/metrics): time to first token, inter-token latency, and the
// request latencies (end to end, queue, prefill, decode).
const std::vector<double> kTtft = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                   0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                   20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kItl = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                  0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kLatency = {0.3,  0.5,  0.8,  1.0,   1.5,   2.0,   2.5,
                                      5.0,  10.0, 15.0, 20.0,  30.0,  40.0,  50.0,
                                      60.0, 120., 240., 480.0, 960.0, 1920., 7680.};
// vLLM's 1-2-5 series up to a context length (request_prompt_tokens / _generation_tokens).
std::vector<double> one_two_five(double max) {
    std::vector<double> out;
    for (double p = 1;; p *= 10)
        for (const double m : {1.0, 2.0, 5.0}) {
            if (m * p > max) return out;
            out.push_back(m * p);
        }
}
constexpr double kMaxTokenBucket = 1 << 20;

double seconds(ServerMetrics::Clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

// A sample value as Prometheus writes it: integers without a fraction, the rest with enough
// digits to read back the same double.
std::string number(double v) {
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    if (std::isnan(v)) return "NaN";
    char buf[40];
    if (v == std::floor(v) && std::fabs(v) < 1e15) {
        std::snprintf(buf, sizeof buf, "%.0f", v);
        return buf;
    }
    for (int digits = 15; digits <= 17; ++digits) {  // the shortest that reads back the same
        std::snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    return buf;
}

// A label value escaped as the format says: backslash, double quote and line feed.
std::string escape(const std::string& s) {
    std::string out;
    for (const char c : s) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

struct Writer {
    std::string out;
    std::string labels;  // {model_name="..."} content, without braces

    void head(const std::string& name, const char* type, const char* help) {
        out += "# HELP " + name + ' ' + help + "\n# TYPE " + name + ' ' + type + '\n';
    }
    void sample(const std::string& name, double v, const std::string& extra = {}) {
        out += name + '{' + labels + (extra.empty() ? "" : "," + extra) + "} " + number(v) + '\n';
    }
    void gauge(const std::string& name, const char* help, double v) {
        head(name, "gauge", help);
        sample(name, v);
    }
    // Counters are named with _total in both the TYPE line and the sample, as prometheus_client
    // writes them (the text format 0.0.4 that vLLM serves).
    void counter(const std::string& name, const char* help, double v) {
        head(name + "_total", "counter", help);
        sample(name + "_total", v);
    }
    void counter_bare(const std::string& name, const char* help, double v) {  // no model_name
        out += "# HELP " + name + "_total " + help + "\n# TYPE " + name + "_total counter\n";
        out += name + "_total " + number(v) + '\n';
    }
};

}  // namespace

ServerMetrics::Histogram::Histogram(std::vector<double> b)
    : bounds(std::move(b)), buckets(bounds.size() + 1, 0) {}

void ServerMetrics::Histogram::observe(double v) {
    const size_t i = size_t(std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin());
    ++buckets[i];  // bounds[i] is the first with v <= bound (le); past the last: +Inf
    sum += v;
    ++count;
}

ServerMetrics::ServerMetrics(std::string model_name)
    : model_(std::move(model_name)),
      ttft_(kTtft),
      itl_(kItl),
      e2e_(kLatency),
      queue_(kLatency),
      prefill_(kLatency),
      decode_(kLatency),
      req_prompt_(one_two_five(kMaxTokenBucket)),
      req_generation_(one_two_five(kMaxTokenBucket)) {}

ServerMetrics::RunClock ServerMetrics::run_started(Clock::time_point arrival,
                                                   Clock::time_point now) {
    std::lock_guard lock(mu_);
    ++running_;
    queue_.observe(seconds(now - arrival));
    RunClock run;
    run.arrival = arrival;
    return run;
}

void ServerMetrics::event(const Event& e, RunClock& run, Clock::time_point now) {
    std::lock_guard lock(mu_);
    if (const auto* t = std::get_if<TokenEvent>(&e); t && t->id >= 0) {  // -1: a text flush
        if (!run.first_token_seen) {
            ttft_.observe(seconds(now - run.arrival));
            run.first_token_seen = true;
        } else {
            itl_.observe(seconds(now - run.last_token));
        }
        run.last_token = now;
    } else if (const auto* m = std::get_if<MemoryCounters>(&e)) {
        kv_usage_ = m->kv_bytes > 0
                        ? std::clamp(double(m->kv_used_bytes) / double(m->kv_bytes), 0.0, 1.0)
                        : 0.0;
    }
}

void ServerMetrics::run_finished(const RunFinished& f, RunClock& run, Clock::time_point now) {
    std::lock_guard lock(mu_);
    if (--running_ == 0) kv_usage_ = 0;  // nothing generates between runs
    if (f.stop == "error") {
        ++errors_;
        return;
    }
    prompt_tokens_ += uint64_t(std::max<int64_t>(0, f.prompt_tokens));
    generation_tokens_ += uint64_t(std::max<int64_t>(0, f.n_tokens));
    cache_queries_ += uint64_t(std::max<int64_t>(0, f.prompt_tokens));
    cache_hits_ += uint64_t(std::max<int64_t>(0, f.cached_tokens));
    draft_tokens_ += uint64_t(std::max<int64_t>(0, f.drafted_tokens));
    accepted_tokens_ += uint64_t(std::max<int64_t>(0, f.accepted_tokens));
    if (f.stop == "cancelled")
        ++success_abort_;
    else if (f.stop == "max_tokens" || f.stop == "context_full")
        ++success_length_;
    else
        ++success_stop_;
    e2e_.observe(seconds(now - run.arrival));
    prefill_.observe(f.prefill_ms / 1000.0);
    decode_.observe(f.decode_ms / 1000.0);
    req_prompt_.observe(double(f.prompt_tokens));
    req_generation_.observe(double(f.n_tokens));
}

std::string ServerMetrics::exposition(const Snapshot& s) const {
    std::lock_guard lock(mu_);
    Writer w;
    w.labels = "model_name=\"" + escape(model_) + '"';
    w.gauge("vllm:num_requests_running", "Number of requests generating now.", double(running_));
    w.gauge("vllm:num_requests_waiting", "Number of requests admitted and waiting for the engine.",
            double(s.waiting));
    w.gauge("vllm:kv_cache_usage_perc", "KV-cache usage; 1 means 100 percent.",
            s.batch ? (s.batch->kv_bytes > 0
                           ? double(s.batch->kv_used_bytes) / double(s.batch->kv_bytes)
                           : 0.0)
                    : kv_usage_);
    w.counter("vllm:prompt_tokens", "Number of prefill tokens processed.", double(prompt_tokens_));
    w.counter("vllm:generation_tokens", "Number of generation tokens processed.",
              double(generation_tokens_));
    w.counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of tokens.",
              double(cache_queries_));
    w.counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of tokens.",
              double(cache_hits_));
    w.counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.",
              double(draft_tokens_));
    w.counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.",
              double(accepted_tokens_));
    w.head("vllm:request_success_total", "counter", "Count of successfully processed requests.");
    w.sample("vllm:request_success_total", double(success_stop_), "finished_reason=\"stop\"");
    w.sample("vllm:request_success_total", double(success_length_), "finished_reason=\"length\"");
    w.sample("vllm:request_success_total", double(success_abort_), "finished_reason=\"abort\"");

    const auto histogram = [&](const std::string& name, const char* help, const Histogram& h) {
        w.head(name, "histogram", help);
        uint64_t cumulative = 0;
        for (size_t i = 0; i < h.bounds.size(); ++i) {
            cumulative += h.buckets[i];
            w.sample(name + "_bucket", double(cumulative), "le=\"" + number(h.bounds[i]) + '"');
        }
        cumulative += h.buckets.back();
        w.sample(name + "_bucket", double(cumulative), "le=\"+Inf\"");
        w.sample(name + "_sum", h.sum);
        w.sample(name + "_count", double(h.count));
    };
    histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
              ttft_);
    histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
              itl_);
    histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
              e2e_);
    histogram("vllm:request_queue_time_seconds",
              "Histogram of time spent waiting for the engine, in seconds.", queue_);
    histogram("vllm:request_prefill_time_seconds",
              "Histogram of time spent in prefill for request, in seconds.", prefill_);
    histogram("vllm:request_decode_time_seconds",
              "Histogram of time spent in decode for request, in seconds.", decode_);
    histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", req_prompt_);
    histogram("vllm:request_generation_tokens", "Number of generation tokens processed.",
              req_generation_);

    w.counter("fluoro:request_errors", "Generations that failed (an engine error).",
              double(errors_));
    if (s.batch) {
        w.gauge("fluoro:batch_slots", "Sequences that may generate at once (--parallel).",
                double(s.batch->n_slots));
        w.counter("fluoro:batch_steps", "Batched forward steps run.", double(s.batch->steps));
        w.counter("fluoro:batch_step_tokens",
                  "Tokens the batched steps computed (decode and prompt).",
                  double(s.batch->step_tokens));
    }
    w.counter_bare("fluoro:requests_cancelled", "Requests whose client went away.",
                   double(s.cancelled));
    w.counter_bare("fluoro:requests_rejected", "Requests answered with a 4xx or 5xx status.",
                   double(s.rejected));
    w.counter_bare("fluoro:requests_timed_out", "Requests stopped by --request-timeout.",
                   double(s.timed_out));
    w.counter_bare("fluoro:http_connections_accepted", "Connections accepted.",
                   double(s.http.accepted));
    w.counter_bare("fluoro:http_connections_refused",
                   "Connections answered 503 because all were busy.", double(s.http.refused));
    w.counter_bare("fluoro:http_connections_evicted",
                   "Slow or idle connections closed to make room.", double(s.http.evicted));
    w.counter_bare("fluoro:http_header_timeouts", "Requests whose headers missed the deadline.",
                   double(s.http.header_timeouts));
    w.counter_bare("fluoro:http_body_timeouts", "Requests whose body missed the deadline.",
                   double(s.http.body_timeouts));
    w.counter_bare("fluoro:http_bodies_too_large", "Bodies refused with 413.",
                   double(s.http.too_large));
    w.counter_bare("fluoro:http_bodies_bad_encoding", "Bodies refused with 415.",
                   double(s.http.bad_encoding));
    w.out +=
        "# HELP fluoro:http_connections_open Connections open now.\n"
        "# TYPE fluoro:http_connections_open gauge\nfluoro:http_connections_open " +
        number(double(s.http.open)) + '\n';
    return w.out;
}

}  // namespace fluoro::app
