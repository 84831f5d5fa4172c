#include "export/trace_export.h"

namespace fluoro::app {

using nlohmann::json;

namespace {

constexpr int kPid = 1;
constexpr int kStepsTid = 1, kTokensTid = 2, kCacheTid = 3, kSpecTid = 4, kKvTid = 5;

double us(int64_t ns) {
    return double(ns) / 1000.0;
}

json meta(const char* name, int tid, const std::string& value) {
    json e = {{"name", name}, {"ph", "M"}, {"pid", kPid}, {"args", {{"name", value}}}};
    if (tid > 0) e["tid"] = tid;
    return e;
}

json counter(const char* name, int64_t t_ns, const char* series, double value) {
    return {
        {"name", name}, {"ph", "C"}, {"pid", kPid}, {"ts", us(t_ns)}, {"args", {{series, value}}}};
}

json instant(const std::string& name, int tid, int64_t t_ns, json args) {
    return {{"name", name},
            {"ph", "i"},
            {"s", "t"},
            {"pid", kPid},
            {"tid", tid},
            {"ts", us(t_ns)},
            {"args", std::move(args)}};
}

}  // namespace

json run_to_chrome_trace(const RunRecord& r) {
    json events = json::array();
    std::string process = "fluoro run " + std::to_string(r.id);
    if (!r.model_name.empty()) process += ": " + r.model_name;
    events.push_back(meta("process_name", 0, process));
    events.push_back(meta("thread_name", kStepsTid, "steps"));
    events.push_back(meta("thread_name", kTokensTid, "tokens"));
    events.push_back(meta("thread_name", kCacheTid, "prompt cache"));
    events.push_back(meta("thread_name", kSpecTid, "speculative"));
    events.push_back(meta("thread_name", kKvTid, "KV policy"));
    for (int tid = 1; tid <= kKvTid; ++tid)
        events.push_back({{"name", "thread_sort_index"},
                          {"ph", "M"},
                          {"pid", kPid},
                          {"tid", tid},
                          {"args", {{"sort_index", tid}}}});

    for (const auto& s : r.steps) {
        const int64_t dur = std::max<int64_t>(0, s.end_ns - s.start_ns);
        events.push_back({{"name", std::string(step_phase_name(s.phase))},
                          {"cat", "step"},
                          {"ph", "X"},
                          {"pid", kPid},
                          {"tid", kStepsTid},
                          {"ts", us(s.start_ns)},
                          {"dur", us(dur)},
                          {"args", {{"index", s.index}, {"tokens", s.tokens}}}});
        int64_t at = s.start_ns;
        for (size_t i = 0; i < kTimeCategories; ++i) {
            const int64_t d = std::min(s.op_ns[i], s.start_ns + dur - at);  // stays inside
            if (d <= 0) continue;
            events.push_back({{"name", std::string(time_category_name(TimeCategory(int(i))))},
                              {"cat", "op"},
                              {"ph", "X"},
                              {"pid", kPid},
                              {"tid", kStepsTid},
                              {"ts", us(at)},
                              {"dur", us(d)},
                              {"args", {{"ns", s.op_ns[i]}}}});
            at += d;
        }
        if (s.phase == StepPhase::Decode && dur > 0)
            events.push_back(
                counter("tok/s", s.end_ns, "tok/s", double(s.tokens) * 1e9 / double(dur)));
    }
    for (const auto& t : r.tokens)
        events.push_back(instant(t.piece.empty() ? "(no text)" : t.piece, kTokensTid, t.t_ns,
                                 {{"index", t.index}, {"id", t.id}, {"logprob", t.logprob}}));
    for (const auto& m : r.memory) {
        events.push_back(counter("KV bytes", m.t_ns, "used", double(m.kv_used_bytes)));
    }
    for (const auto& c : r.cache_events) {
        const double rate =
            c.prompt_tokens > 0 ? double(c.cached_tokens) / double(c.prompt_tokens) : 0;
        events.push_back(counter("cache hit rate", c.t_ns, "rate", rate));
        events.push_back(instant(c.cached_tokens > 0 ? "cache hit" : "cache miss", kCacheTid,
                                 c.t_ns,
                                 {{"cached_tokens", c.cached_tokens},
                                  {"computed_tokens", c.computed_tokens},
                                  {"evicted_tokens", c.evicted_tokens}}));
    }
    int64_t drafted = 0, accepted = 0;
    for (const auto& s : r.spec_steps) {
        drafted += int64_t(s.drafted.size());
        accepted += s.accepted;
        events.push_back(counter("acceptance rate", s.t_ns, "rate",
                                 drafted > 0 ? double(accepted) / double(drafted) : 0));
        const bool all = s.accepted == int32_t(s.drafted.size());
        json args = {{"drafter", s.drafter},
                     {"drafted", s.drafted.size()},
                     {"accepted", s.accepted},
                     {"resampled", s.resampled},
                     {"bonus", s.bonus}};
        events.push_back(
            instant(all ? "drafts accepted" : "drafts rejected", kSpecTid, s.t_ns, args));
        // The step ends at t_ns: drafting, then the target's verification, laid end to end.
        const int64_t verify_from = std::max<int64_t>(0, s.t_ns - s.verify_ns);
        const int64_t draft_from = std::max<int64_t>(0, verify_from - s.draft_ns);
        const auto slice = [&](const char* name, int64_t from, int64_t to) {
            if (to > from)
                events.push_back({{"name", name},
                                  {"cat", "spec"},
                                  {"ph", "X"},
                                  {"pid", kPid},
                                  {"tid", kSpecTid},
                                  {"ts", us(from)},
                                  {"dur", us(to - from)},
                                  {"args", {{"step", s.step}}}});
        };
        slice("draft", draft_from, verify_from);
        slice("verify", verify_from, s.t_ns);
    }
    for (const auto& e : r.kv_evictions) {
        int64_t by_reason[3] = {0, 0, 0};  // sink, recent, heavy
        for (uint8_t why : e.reasons)
            if (why < 3) ++by_reason[why];
        events.push_back(instant("KV eviction", kKvTid, e.t_ns,
                                 {{"step", e.step},
                                  {"policy", e.policy},
                                  {"budget", e.budget},
                                  {"length_before", e.length_before},
                                  {"evicted", e.evicted.size()},
                                  {"kept", e.kept.size()},
                                  {"sinks", by_reason[0]},
                                  {"recent", by_reason[1]},
                                  {"heavy", by_reason[2]},
                                  {"ms", e.ms}}));
        events.push_back(counter("KV tokens kept", e.t_ns, "kept", double(e.kept.size())));
    }
    return {{"traceEvents", events},
            {"displayTimeUnit", "ms"},
            {"otherData",
             {{"model", r.model_path},
              {"model_sha256", r.model_sha256},
              {"started_at", r.started_at},
              {"program_version", r.program_version}}}};
}

}  // namespace fluoro::app
