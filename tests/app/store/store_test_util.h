// Helpers for the store tests: temporary database paths, whole-file reads, synthetic runs.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "telemetry/events.h"
#include "test_temp.h"

namespace fluoro::app::test {

inline std::filesystem::path temp_db(const std::string& name) {
    const auto dir = fluoro::test::unique_temp_path("fluoro_store_tests");
    std::filesystem::create_directories(dir);
    const auto p = dir / (name + ".db");
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(p.string() + suffix);
    return p;
}

inline std::string read_bytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

inline RunStarted run_started(uint64_t run, uint64_t conversation, RunKind kind, int64_t kept,
                              std::string user_text) {
    RunStarted e;
    e.run = run;
    e.conversation = conversation;
    e.kind = kind;
    e.kept_messages = kept;
    e.user_text = std::move(user_text);
    e.model_path = "/nonexistent/model.gguf";
    e.model_name = "Test";
    e.arch = "llama";
    e.backend = "cpu";
    e.threads = 2;
    e.ctx = 256;
    e.kv_type = "f16";
    e.prompt_tokens = 9;
    e.wall_clock_ms = 1700000000123;
    e.level = TelemetryLevel::Full;
    return e;
}

inline std::vector<Event> synthetic_run(uint64_t run, uint64_t conversation, RunKind kind,
                                        int64_t kept, const std::string& user_text,
                                        const std::vector<std::string>& pieces,
                                        bool finished = true) {
    std::vector<Event> ev;
    ev.push_back(run_started(run, conversation, kind, kept, user_text));
    std::string text;
    for (size_t i = 0; i < pieces.size(); ++i) {
        StepEvent s{run,
                    int64_t(i),
                    i == 0 ? StepPhase::Prefill : StepPhase::Decode,
                    i == 0 ? 9 : 1,
                    int64_t(i) * 1000,
                    int64_t(i) * 1000 + 900,
                    {}};
        s.op_ns[size_t(TimeCategory::Matmul)] = 500 + int64_t(i);
        s.op_ns[size_t(TimeCategory::Sampling)] = 100;
        ev.push_back(s);
        ev.push_back(TokenEvent{run,
                                int64_t(i),
                                int32_t(10 + i),
                                pieces[i],
                                -0.5f - float(i),
                                {{int32_t(10 + i), -0.5f}, {3, -2.25f}},
                                int64_t(i) * 1000 + 950});
        text += pieces[i];
    }
    ev.push_back(PrefixCacheEvent{run, 9, 0, 9, 0, 900});
    ev.push_back(MemoryCounters{run, 1000, 2000, 300, 400, 950});
    auto kv = std::make_shared<KvSnapshot>();
    kv->run = run;
    kv->step = 0;
    kv->block_tokens = 16;
    kv->bytes_per_token = 64;
    kv->blocks = {{0, KvBlockState::Used, 10}, {-1, KvBlockState::Free, 0}};
    kv->t_ns = 950;
    ev.push_back(std::shared_ptr<const KvSnapshot>(kv));
    if (finished) {
        RunFinished f;
        f.run = run;
        f.stop = "eog";
        f.text = text;
        f.n_tokens = int64_t(pieces.size());
        f.prompt_tokens = 9;
        f.computed_tokens = 9;
        f.ttft_ms = 1.5;
        f.decode_ms = 3.25;
        f.decode_steps = int64_t(pieces.size()) - 1;
        f.t_ns = int64_t(pieces.size()) * 1000;
        ev.push_back(f);
    }
    return ev;
}

}  // namespace fluoro::app::test
