#include "server/batch_trace.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace fluoro::app {

using nlohmann::json;

BatchTraceWriter::BatchTraceWriter(const std::filesystem::path& path, int64_t n_slots)
    : out_(path, std::ios::binary | std::ios::trunc) {
    if (!out_) throw Error("cannot write the batch trace " + path.string());
    const auto meta = [&](const char* what, int64_t tid, const std::string& name) {
        json e{{"ph", "M"}, {"pid", 1}, {"tid", tid}, {"name", what}, {"args", {{"name", name}}}};
        line(e.dump());
    };
    meta("process_name", 0, "fluoro serve: batch scheduler");
    meta("thread_name", 1, "steps");
    for (int64_t s = 0; s < n_slots; ++s) {
        meta("thread_name", 10 + s, "slot " + std::to_string(s));
        line(json{{"ph", "M"},
                  {"pid", 1},
                  {"tid", 10 + s},
                  {"name", "thread_sort_index"},
                  {"args", {{"sort_index", 10 + s}}}}
                 .dump());
    }
}

BatchTraceWriter::~BatchTraceWriter() {
    close();
}

void BatchTraceWriter::line(const std::string& event) {
    out_ << (first_ ? "[\n" : ",\n") << event;
    first_ = false;
}

void BatchTraceWriter::step(const BatchStep& s, const BatchLoad& load) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    const double ts = std::chrono::duration<double, std::micro>(s.started - origin_).count();
    const double dur = s.ms * 1000.0;
    line(json{{"ph", "X"},
              {"pid", 1},
              {"tid", 1},
              {"name", "step " + std::to_string(s.index)},
              {"ts", ts},
              {"dur", dur},
              {"args",
               {{"tokens", s.tokens},
                {"decode_tokens", s.decode_tokens},
                {"prefill_tokens", s.prefill_tokens},
                {"forward_ms", s.forward_ms}}}}
             .dump());
    for (const BatchStepPart& p : s.parts)
        line(json{{"ph", "X"},
                  {"pid", 1},
                  {"tid", 10 + p.slot},
                  {"name", p.prefill ? "prefill" : "decode"},
                  {"cat", p.prefill ? "prefill" : "decode"},
                  {"ts", ts},
                  {"dur", dur},
                  {"args",
                   {{"run", p.tag},
                    {"tokens", p.tokens},
                    {"prompt_done", p.prompt_done},
                    {"kv_tokens", p.kv_tokens}}}}
                 .dump());
    const double end = ts + dur;
    line(json{{"ph", "C"},
              {"pid", 1},
              {"name", "requests"},
              {"ts", end},
              {"args", {{"running", load.running}, {"waiting", load.waiting}}}}
             .dump());
    line(json{{"ph", "C"},
              {"pid", 1},
              {"name", "KV pool"},
              {"ts", end},
              {"args", {{"used MiB", double(load.kv_used_bytes) / (1024.0 * 1024.0)}}}}
             .dump());
}

void BatchTraceWriter::close() {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    closed_ = true;
    out_ << (first_ ? "[]\n" : "\n]\n");
    out_.flush();
}

}  // namespace fluoro::app
