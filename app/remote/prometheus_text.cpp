#include "remote/prometheus_text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <limits>

#include "core/error.h"

namespace fluoro::app {
namespace {

[[noreturn]] void bad(size_t line, const std::string& why) {
    throw Error("metrics: line " + std::to_string(line) + ": " + why);
}

bool name_char(char c, bool first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
           (!first && c >= '0' && c <= '9');
}

double parse_value(std::string_view v, size_t line) {
    if (v == "+Inf" || v == "Inf") return std::numeric_limits<double>::infinity();
    if (v == "-Inf") return -std::numeric_limits<double>::infinity();
    if (v == "NaN") return std::numeric_limits<double>::quiet_NaN();
    const std::string s(v);
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) bad(line, "'" + s + "' is not a number");
    return d;
}

}  // namespace

std::string MetricSample::label(std::string_view key) const {
    for (const auto& [k, v] : labels)
        if (k == key) return v;
    return {};
}

std::optional<double> Exposition::sum(std::string_view name) const {
    const std::string total = std::string(name) + "_total";
    std::optional<double> out;
    for (const MetricSample& s : samples)
        if (s.name == name || s.name == total) out = out.value_or(0.0) + s.value;
    return out;
}

Exposition parse_prometheus_text(std::string_view text) {
    Exposition e;
    size_t line_no = 0;
    while (!text.empty()) {
        const size_t nl = text.find('\n');
        std::string_view l = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        ++line_no;
        if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
        while (!l.empty() && (l.front() == ' ' || l.front() == '\t')) l.remove_prefix(1);
        if (l.empty()) continue;
        if (l.front() == '#') {
            // "# TYPE name type"; other comments (HELP, anything else) carry nothing we need.
            if (l.rfind("# TYPE ", 0) == 0) {
                const std::string_view rest = l.substr(7);
                const size_t sp = rest.find(' ');
                if (sp == std::string_view::npos) bad(line_no, "a TYPE line without a type");
                e.types[std::string(rest.substr(0, sp))] = std::string(rest.substr(sp + 1));
            }
            continue;
        }
        MetricSample s;
        size_t i = 0;
        while (i < l.size() && name_char(l[i], i == 0)) ++i;
        if (i == 0) bad(line_no, "a sample must start with a metric name");
        s.name = std::string(l.substr(0, i));
        if (i < l.size() && l[i] == '{') {
            ++i;
            for (;;) {
                while (i < l.size() && l[i] == ' ') ++i;
                if (i < l.size() && l[i] == '}') {
                    ++i;
                    break;
                }
                const size_t k0 = i;
                while (i < l.size() && name_char(l[i], i == k0)) ++i;
                if (i == k0 || i + 1 >= l.size() || l[i] != '=' || l[i + 1] != '"')
                    bad(line_no, "a label must be name=\"value\"");
                std::string key(l.substr(k0, i - k0)), value;
                i += 2;
                for (;; ++i) {
                    if (i >= l.size()) bad(line_no, "a label value is not closed");
                    if (l[i] == '"') break;
                    if (l[i] == '\\') {
                        if (++i >= l.size()) bad(line_no, "a label value ends in a backslash");
                        value += l[i] == 'n' ? '\n' : l[i];
                    } else {
                        value += l[i];
                    }
                }
                ++i;
                s.labels.emplace_back(std::move(key), std::move(value));
                while (i < l.size() && l[i] == ' ') ++i;
                if (i < l.size() && l[i] == ',')
                    ++i;
                else if (i < l.size() && l[i] == '}')
                    continue;
                else
                    bad(line_no, "labels must be separated by commas and closed by }");
            }
        }
        if (i >= l.size() || (l[i] != ' ' && l[i] != '\t'))
            bad(line_no, "a sample needs a value after its name");
        std::string_view rest = l.substr(i);
        while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t'))
            rest.remove_prefix(1);
        const size_t sp = rest.find_first_of(" \t");
        s.value = parse_value(rest.substr(0, sp), line_no);
        e.samples.push_back(std::move(s));
    }
    return e;
}

ServerLoad server_load(const Exposition& e) {
    // The first of `names` the server exposes.
    const auto first = [&](std::initializer_list<std::string_view> names) {
        for (const std::string_view n : names)
            if (std::optional<double> v = e.sum(n)) return v;
        return std::optional<double>();
    };
    ServerLoad l;
    if (e.sum("vllm:num_requests_running") || e.sum("vllm:generation_tokens")) {
        l.names = "vllm";
        l.running = first({"vllm:num_requests_running"});
        l.waiting = first({"vllm:num_requests_waiting"});
        l.kv_usage = first({"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"});
        l.prefix_queries = first({"vllm:prefix_cache_queries"});
        l.prefix_hits = first({"vllm:prefix_cache_hits"});
        l.prompt_tokens = first({"vllm:prompt_tokens"});
        l.generation_tokens = first({"vllm:generation_tokens"});
        l.spec_draft_tokens = first({"vllm:spec_decode_num_draft_tokens"});
        l.spec_accepted_tokens = first({"vllm:spec_decode_num_accepted_tokens"});
    } else if (e.sum("sglang:num_running_reqs") || e.sum("sglang:generation_tokens")) {
        l.names = "sglang";
        l.running = first({"sglang:num_running_reqs"});
        l.waiting = first({"sglang:num_queue_reqs"});
        l.kv_usage = first({"sglang:token_usage"});
        l.prompt_tokens = first({"sglang:prompt_tokens"});
        l.generation_tokens = first({"sglang:generation_tokens"});
        // Its prefix cache counts the prompt tokens it found cached, of all prompt tokens.
        l.prefix_hits = first({"sglang:cached_tokens"});
        if (l.prefix_hits) l.prefix_queries = l.prompt_tokens;
    } else if (e.sum("llamacpp:requests_processing") || e.sum("llamacpp:tokens_predicted")) {
        l.names = "llamacpp";
        l.running = first({"llamacpp:requests_processing"});
        l.waiting = first({"llamacpp:requests_deferred"});
        l.kv_usage = first({"llamacpp:kv_cache_usage_ratio"});  // older builds only
        l.prompt_tokens = first({"llamacpp:prompt_tokens"});
        l.generation_tokens = first({"llamacpp:tokens_predicted"});
    }
    return l;
}

std::string server_load_line(const ServerLoad& before, const ServerLoad& after) {
    const auto num = [](const std::optional<double>& v) {
        if (!v) return std::string("-");
        char b[32];
        std::snprintf(b, sizeof b, "%.0f", *v);
        return std::string(b);
    };
    const auto delta = [&](const std::optional<double>& a, const std::optional<double>& b) {
        if (!a || !b) return std::string("-");
        char buf[32];
        std::snprintf(buf, sizeof buf, "%+.0f", *a - *b);
        return std::string(buf);
    };
    std::string s = "server" +
                    (after.names.empty() ? std::string(" (no known metric names)")
                                         : " (" + after.names + " names)") +
                    ": running " + num(after.running) + ", waiting " + num(after.waiting);
    if (after.kv_usage) {
        char b[48];
        std::snprintf(b, sizeof b, ", KV cache %.1f %% used", 100.0 * *after.kv_usage);
        s += b;
    } else {
        s += ", KV cache -";
    }
    s += ", prefix cache " + num(after.prefix_hits) + "/" + num(after.prefix_queries) + " hits (" +
         delta(after.prefix_hits, before.prefix_hits) + "/" +
         delta(after.prefix_queries, before.prefix_queries) + "), tokens " +
         delta(after.prompt_tokens, before.prompt_tokens) + " prompt " +
         delta(after.generation_tokens, before.generation_tokens) + " generated";
    return s;
}

}  // namespace fluoro::app
