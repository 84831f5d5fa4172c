#include "advisor/advice_report.h"

#include <cstdio>

namespace fluoro::app {

std::string percent(double fraction) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %%", fraction * 100.0);
    return buf;
}

namespace {

std::string quoted(const std::string& s) {
    return "\"" + s + "\"";
}

std::string name_of(std::span<const AdvisorRequest> reqs, int64_t i) {
    return i >= 0 && size_t(i) < reqs.size() ? reqs[size_t(i)].id : "-";
}

int64_t served_cached(std::span<const AdvisorRequest> reqs, int64_t& prompt_tokens) {
    int64_t cached = 0;
    prompt_tokens = 0;
    for (const auto& r : reqs) {
        if (r.served_cached < 0) return -1;
        cached += r.served_cached;
        prompt_tokens += int64_t(r.ids.size());
    }
    return reqs.empty() ? -1 : cached;
}

std::string rate_line(const char* label, const CacheSimulation& s) {
    return std::string("  ") + label + percent(s.hit_rate()) + "  (" +
           std::to_string(s.cached_tokens) + " of " + std::to_string(s.prompt_tokens) +
           " prompt tokens; " + percent(s.hit_rate_after_first()) + " after the first request)\n";
}

std::string rates_text(const PromptAdvice& a, std::span<const AdvisorRequest> reqs) {
    std::string out = "Prefix cache hit rate (an unbounded cache, requests in recorded order)\n";
    out += rate_line("recorded prompts      ", a.recorded);
    out += rate_line("stable first (est.)   ", a.what_if.simulation);
    int64_t prompt = 0;
    const int64_t served = served_cached(reqs, prompt);
    if (served >= 0 && prompt > 0)
        out += "  as the engine served  " + percent(double(served) / double(prompt)) + "  (" +
               std::to_string(served) + " cached tokens; its cache is bounded)\n";
    const WhatIf& w = a.what_if;
    if (w.requests_rewritten > 0)
        out += "  estimate: " + std::to_string(w.requests_rewritten) +
               " prompts rewritten as token ids (" + std::to_string(w.moved_spans) +
               " changing values moved to the end, " + std::to_string(w.reordered_regions) +
               " reordered regions put in one order)\n";
    else
        out += "  (no cache breakers found: the estimate is the recorded rate)\n";
    return out;
}

std::string shared_text(const PromptAdvice& a, std::span<const AdvisorRequest> reqs) {
    std::string out = "\nShared prefixes\n";
    if (a.shared.empty()) return out + "  (no prefix shared by two requests)\n";
    for (const auto& p : a.shared) {
        out += "  ";
        out += std::to_string(p.tokens) + " tokens x " + std::to_string(p.requests) +
               " requests (caching it once saves " + std::to_string(p.saved_tokens) +
               " tokens), e.g. " + name_of(reqs, p.example) + "\n    " + quoted(p.head) + " ... " +
               quoted(p.tail) + "\n";
        if (p.branches.empty()) continue;
        out += "    then:";
        for (const auto& b : p.branches) {
            out += ' ';
            out += quoted(b.next) + " x" + std::to_string(b.requests);
        }
        out += "\n";
    }
    return out;
}

std::string breaker_title(const CacheBreaker& b) {
    std::string where = "token " + std::to_string(b.location.offset) + " of " +
                        describe_location(b.location) + " (prompt token " +
                        std::to_string(b.token) + ")";
    if (b.kind == BreakerKind::Reordered)
        return "reordered " +
               std::string(b.segment_kind == SegmentKind::JsonObjects ? "JSON objects" : "lines") +
               " (" + std::to_string(b.segments) + ") at " + where;
    return std::string(span_kind_name(b.span)) + " at " + where;
}

std::string breakers_text(const PromptAdvice& a, std::span<const AdvisorRequest> reqs) {
    std::string out = "\nCache breakers\n";
    if (a.breakers.empty()) return out + "  (none found)\n";
    int n = 0;
    for (const auto& b : a.breakers) {
        out += std::string("  ") + std::to_string(++n) + ". " + breaker_title(b) + ": in " +
               std::to_string(b.occurrences) + " request pair(s), " +
               std::to_string(b.matched_after) + " tokens after it matched again\n";
        out += "     " + quoted(b.before + "⟦" + b.text + "⟧" + b.after) + " in " +
               name_of(reqs, b.request) + "; " + quoted(b.other_text) + " in " +
               name_of(reqs, b.source) + "\n";
        out += "     fix: " + b.suggestion + "\n";
    }
    return out;
}

std::string request_line(const PromptAdvice& a, std::span<const AdvisorRequest> reqs, size_t i) {
    const RequestReuse& r = a.recorded.requests[i];
    std::string out =
        "  " + reqs[i].id + "  " + (reqs[i].time.empty() ? "" : reqs[i].time + "  ") +
        std::to_string(r.prompt_tokens) + " tokens, cached " + std::to_string(r.cached_tokens) +
        " (stable first: " + std::to_string(a.what_if.simulation.requests[i].cached_tokens) + ")";
    switch (r.reuse) {
        case Reuse::Cold:
            return out + ", cold\n";
        case Reuse::Extends:
            return out + ", extends " + name_of(reqs, r.source) + "\n";
        case Reuse::Repeats:
            return out + ", repeats " + name_of(reqs, r.source) + "\n";
        case Reuse::Diverges:
            break;
    }
    const auto& [here, there] = a.divergence[i];
    return out + ", parts from " + name_of(reqs, r.source) + " at token " +
           std::to_string(r.shared_tokens) + ": " + quoted(here) + " vs " + quoted(there) + "\n";
}

nlohmann::ordered_json sim_json(const CacheSimulation& s) {
    return {{"prompt_tokens", s.prompt_tokens},
            {"cached_tokens", s.cached_tokens},
            {"hit_rate", s.hit_rate()},
            {"prompt_tokens_after_first", s.prompt_tokens_after_first},
            {"cached_tokens_after_first", s.cached_tokens_after_first},
            {"hit_rate_after_first", s.hit_rate_after_first()}};
}

nlohmann::ordered_json shared_json(const SharedPrefix& p, std::span<const AdvisorRequest> reqs) {
    nlohmann::ordered_json branches = nlohmann::ordered_json::array();
    for (const auto& b : p.branches)
        branches.push_back({{"next", b.next}, {"requests", b.requests}});
    return {{"tokens", p.tokens},
            {"requests", p.requests},
            {"saved_tokens", p.saved_tokens},
            {"example", name_of(reqs, p.example)},
            {"head", p.head},
            {"tail", p.tail},
            {"branches", branches}};
}

nlohmann::ordered_json breaker_json(const CacheBreaker& b, std::span<const AdvisorRequest> reqs) {
    nlohmann::ordered_json j = {
        {"kind", b.kind == BreakerKind::Volatile ? "volatile" : "reordered"},
        {"class", b.kind == BreakerKind::Volatile              ? std::string(span_kind_name(b.span))
                  : b.segment_kind == SegmentKind::JsonObjects ? "json_objects"
                                                               : "lines"},
        {"request", name_of(reqs, b.request)},
        {"source", name_of(reqs, b.source)},
        {"token", b.token},
        {"tokens", b.tokens},
        {"message", b.location.role},
        {"message_token", b.location.offset},
        {"before", b.before},
        {"text", b.text},
        {"source_text", b.other_text},
        {"after", b.after},
        {"occurrences", b.occurrences},
        {"matched_after", b.matched_after},
        {"suggestion", b.suggestion}};
    if (b.kind == BreakerKind::Reordered) j["segments"] = b.segments;
    return j;
}

nlohmann::ordered_json request_json(const PromptAdvice& a, std::span<const AdvisorRequest> reqs,
                                    size_t i) {
    const RequestReuse& r = a.recorded.requests[i];
    nlohmann::ordered_json j = {
        {"id", reqs[i].id},
        {"time", reqs[i].time},
        {"prompt_tokens", r.prompt_tokens},
        {"shared_tokens", r.shared_tokens},
        {"cached_tokens", r.cached_tokens},
        {"stable_first_cached_tokens", a.what_if.simulation.requests[i].cached_tokens},
        {"reuse", std::string(reuse_name(r.reuse))},
        {"source", r.source >= 0 ? nlohmann::ordered_json(name_of(reqs, r.source))
                                 : nlohmann::ordered_json(nullptr)}};
    if (reqs[i].served_cached >= 0) j["served_cached_tokens"] = reqs[i].served_cached;
    if (r.reuse == Reuse::Diverges)
        j["divergence"] = {{"token", r.shared_tokens},
                           {"id", r.token},
                           {"source_id", r.source_token},
                           {"text", a.divergence[i].first},
                           {"source_text", a.divergence[i].second}};
    return j;
}

}  // namespace

std::string advice_text(const PromptAdvice& a, std::span<const AdvisorRequest> reqs,
                        size_t per_request_up_to) {
    std::string out = rates_text(a, reqs) + shared_text(a, reqs) + breakers_text(a, reqs);
    if (reqs.size() > per_request_up_to) return out;
    out += "\nRequests\n";
    for (size_t i = 0; i < reqs.size(); ++i) out += request_line(a, reqs, i);
    return out;
}

nlohmann::ordered_json advice_json(const PromptAdvice& a, std::span<const AdvisorRequest> reqs) {
    nlohmann::ordered_json j;
    j["recorded"] = sim_json(a.recorded);
    nlohmann::ordered_json w = sim_json(a.what_if.simulation);
    w["estimate"] = true;
    w["rewrite"] =
        "changing values moved to the end, reordered segments in the first request's order (token "
        "ids, not re-tokenized)";
    w["requests_rewritten"] = a.what_if.requests_rewritten;
    w["moved_spans"] = a.what_if.moved_spans;
    w["reordered_regions"] = a.what_if.reordered_regions;
    j["stable_first"] = w;
    int64_t prompt = 0;
    const int64_t served = served_cached(reqs, prompt);
    if (served >= 0)
        j["served"] = {{"cached_tokens", served},
                       {"hit_rate", prompt > 0 ? double(served) / double(prompt) : 0.0}};
    j["shared_prefixes"] = nlohmann::ordered_json::array();
    for (const auto& p : a.shared) j["shared_prefixes"].push_back(shared_json(p, reqs));
    j["breakers"] = nlohmann::ordered_json::array();
    for (const auto& b : a.breakers) j["breakers"].push_back(breaker_json(b, reqs));
    j["requests"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < reqs.size(); ++i) j["requests"].push_back(request_json(a, reqs, i));
    return j;
}

}  // namespace fluoro::app
