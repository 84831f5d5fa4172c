// The continuous-batching scheduler as a Chrome Trace Event file (`fluoro serve --batch-trace
// FILE`; ui.perfetto.dev and chrome://tracing open it): what every forward step computed, for
// whom, while the server runs.
//   pid 1 "fluoro serve: batch scheduler"; tid 1 "steps": one X slice per step ("step N", args:
//   tokens, decode and prefill tokens, forward ms); tid 10 + s "slot s": one X slice per step the
//   slot took part in — "prefill" (a chunk of its prompt; args: run, tokens, prompt_done,
//   kv_tokens) or "decode" (its next token) — so each request is a row of slices over time;
//   counter tracks "requests" (running, waiting) and "KV pool" (used MiB).
// Times are microseconds from the writer's creation. Written as it goes, one line per event, in
// the JSON Array Format (whose closing bracket is optional: a server killed mid-run leaves a
// readable file); close() adds it.
//
// Threads: step() from the engine's thread (its step observer), close() from any; serialized.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "decode/batch_decoder.h"
#include "runtime/batch_engine.h"

namespace fluoro::app {

class BatchTraceWriter {
  public:
    // Creates (truncates) `path`; throws fluoro::Error naming it when it cannot.
    BatchTraceWriter(const std::filesystem::path& path, int64_t n_slots);
    ~BatchTraceWriter();  // close()
    BatchTraceWriter(const BatchTraceWriter&) = delete;
    BatchTraceWriter& operator=(const BatchTraceWriter&) = delete;

    void step(const BatchStep& s, const BatchLoad& load);
    void close();

  private:
    void line(const std::string& event);

    std::mutex mu_;
    std::ofstream out_;
    std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
    bool first_ = true, closed_ = false;
};

}  // namespace fluoro::app
