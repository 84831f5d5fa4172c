#include "export/trace_export.h"

#include <algorithm>
#include <set>
#include <vector>

#include "tensor/ggml_type.h"

namespace fluoro::app {

using nlohmann::json;

namespace {

constexpr int kPid = 1;
constexpr int kStepsTid = 1, kTokensTid = 2, kCacheTid = 3, kSpecTid = 4, kKvTid = 5;
constexpr int kRequestTid = 6;
constexpr int kWorkerTid0 = 10;  // worker w >= 1 of the host pool: tid kWorkerTid0 + w

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

json slice(const std::string& name, const char* cat, int tid, int64_t from_ns, int64_t to_ns,
           json args) {
    return {{"name", name},
            {"cat", cat},
            {"ph", "X"},
            {"pid", kPid},
            {"tid", tid},
            {"ts", us(from_ns)},
            {"dur", us(std::max<int64_t>(0, to_ns - from_ns))},
            {"args", std::move(args)}};
}

// A step without a trace: its time per operation category, laid end to end inside it (the order
// is not the real interleaving).
void category_slices(const StepEvent& s, int64_t dur, json& events) {
    int64_t at = s.start_ns;
    for (size_t i = 0; i < kTimeCategories; ++i) {
        const int64_t d = std::min(s.op_ns[i], s.start_ns + dur - at);  // stays inside
        if (d <= 0) continue;
        events.push_back(slice(std::string(time_category_name(TimeCategory(int(i)))), "op",
                               kStepsTid, at, at + d, {{"ns", s.op_ns[i]}}));
        at += d;
    }
}

double per_second(double amount, int64_t ns) {
    return ns > 0 ? amount * 1e9 / double(ns) : 0.0;
}

// A traced step (level Trace), in its real order: layer slices (each run of consecutive ops of one
// layer) holding the op slices, and under each op the engine thread's own share of the pool's
// work ("tasks") and its wait for the other workers ("wait"); the host time after the last op
// (sampling, detokenization) as "host"; the other workers' busy spans on tracks of their own. All
// clamped into the step, so the slices nest. Returns the bytes the step's ops read.
double traced_slices(const StepEvent& s, json& events, std::set<int>& worker_tids) {
    const StepTrace& t = *s.trace;
    const auto clamp = [&](int64_t ns) { return std::clamp(ns, s.start_ns, s.end_ns); };
    double bytes = 0;
    size_t i = 0;
    int64_t last_end = s.start_ns;
    std::vector<const WorkerBusy*> mine;  // the engine thread's spans, in time order
    for (const WorkerBusy& w : t.workers)
        if (w.worker == 0) mine.push_back(&w);
    std::sort(mine.begin(), mine.end(),
              [](const WorkerBusy* a, const WorkerBusy* b) { return a->start_ns < b->start_ns; });
    size_t next_mine = 0;
    while (i < t.ops.size()) {
        const int32_t layer = t.ops[i].layer;
        size_t j = i;
        while (j < t.ops.size() && t.ops[j].layer == layer) ++j;
        if (layer >= 0)
            events.push_back(slice("layer " + std::to_string(layer), "layer", kStepsTid,
                                   clamp(t.ops[i].start_ns), clamp(t.ops[j - 1].end_ns),
                                   {{"layer", layer}, {"ops", j - i}}));
        for (; i < j; ++i) {
            const OpSpan& op = t.ops[i];
            const int64_t from = clamp(op.start_ns), to = clamp(op.end_ns);
            json args = {{"layer", op.layer},
                         {"rows", op.rows},
                         {"shape", op.shape},
                         {"category", time_category_name(op.category)}};
            if (op.weight_type >= 0) args["weight_type"] = type_name(GgmlType(op.weight_type));
            if (op.bytes > 0) {
                args["bytes"] = op.bytes;
                args["GB/s"] = per_second(op.bytes, op.end_ns - op.start_ns) / 1e9;
            }
            if (op.flops > 0) {
                args["flops"] = op.flops;
                args["GFLOP/s"] = per_second(op.flops, op.end_ns - op.start_ns) / 1e9;
            }
            bytes += op.bytes;
            events.push_back(slice(std::string(t.name_of(op)), "op", kStepsTid, from, to, args));
            // The engine thread's spans that lie in this op.
            while (next_mine < mine.size() && mine[next_mine]->start_ns < op.start_ns) ++next_mine;
            for (; next_mine < mine.size() && mine[next_mine]->start_ns < op.end_ns; ++next_mine) {
                const WorkerBusy& w = *mine[next_mine];
                const int64_t a = std::clamp(w.start_ns, from, to);
                const int64_t b = std::clamp(w.end_ns, from, to);
                events.push_back(slice(w.tasks > 0 ? "tasks" : "wait", "worker", kStepsTid, a, b,
                                       {{"tasks", w.tasks}}));
            }
            last_end = std::max(last_end, to);
        }
    }
    if (s.end_ns > last_end)
        events.push_back(slice("host", "host", kStepsTid, last_end, s.end_ns,
                               {{"what", "sampling, detokenization, bookkeeping"}}));
    for (const WorkerBusy& w : t.workers) {
        if (w.worker == 0) continue;
        const int tid = kWorkerTid0 + w.worker;
        worker_tids.insert(tid);
        events.push_back(slice("tasks", "worker", tid, w.start_ns, w.end_ns, {{"tasks", w.tasks}}));
    }
    return bytes;
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
    events.push_back(meta("thread_name", kRequestTid, "request"));
    for (int tid = 1; tid <= kRequestTid; ++tid)
        events.push_back({{"name", "thread_sort_index"},
                          {"ph", "M"},
                          {"pid", kPid},
                          {"tid", tid},
                          {"args", {{"sort_index", tid}}}});

    // The request: one slice for the whole run, a flow arrow from it to each of its steps.
    int64_t run_end = 0;
    for (const auto& s : r.steps) run_end = std::max(run_end, s.end_ns);
    run_end = std::max(run_end, r.duration_ns);
    events.push_back(slice("request: " + r.kind, "request", kRequestTid, 0, run_end,
                           {{"prompt_tokens", r.prompt_tokens},
                            {"tokens", r.n_tokens},
                            {"stop", r.stop_reason.value_or("unfinished")}}));
    std::set<int> worker_tids;
    bool traced = false;
    for (const auto& s : r.steps) {
        const int64_t dur = std::max<int64_t>(0, s.end_ns - s.start_ns);
        events.push_back(slice(std::string(step_phase_name(s.phase)), "step", kStepsTid, s.start_ns,
                               s.start_ns + dur, {{"index", s.index}, {"tokens", s.tokens}}));
        const int64_t flow = s.index + 1;
        events.push_back({{"name", "step"},
                          {"cat", "flow"},
                          {"ph", "s"},
                          {"id", flow},
                          {"pid", kPid},
                          {"tid", kRequestTid},
                          {"ts", us(s.start_ns)}});
        events.push_back({{"name", "step"},
                          {"cat", "flow"},
                          {"ph", "f"},
                          {"bp", "e"},
                          {"id", flow},
                          {"pid", kPid},
                          {"tid", kStepsTid},
                          {"ts", us(s.start_ns)}});
        if (s.trace) {
            traced = true;
            const double bytes = traced_slices(s, events, worker_tids);
            if (dur > 0)
                events.push_back(
                    counter("achieved GB/s", s.end_ns, "GB/s", per_second(bytes, dur) / 1e9));
        } else {
            category_slices(s, dur, events);
        }
        if (s.phase == StepPhase::Decode && dur > 0)
            events.push_back(
                counter("tok/s", s.end_ns, "tok/s", double(s.tokens) * 1e9 / double(dur)));
    }
    if (traced) events.push_back(meta("thread_name", kStepsTid, "engine thread (steps)"));
    for (int tid : worker_tids) {
        events.push_back(meta("thread_name", tid, "worker " + std::to_string(tid - kWorkerTid0)));
        events.push_back({{"name", "thread_sort_index"},
                          {"ph", "M"},
                          {"pid", kPid},
                          {"tid", tid},
                          {"args", {{"sort_index", tid}}}});
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
        if (verify_from > draft_from)
            events.push_back(
                slice("draft", "spec", kSpecTid, draft_from, verify_from, {{"step", s.step}}));
        if (s.t_ns > verify_from)
            events.push_back(
                slice("verify", "spec", kSpecTid, verify_from, s.t_ns, {{"step", s.step}}));
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
