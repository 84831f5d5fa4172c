// Helpers for the store tests: temporary database paths, whole-file reads, synthetic runs.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "store/store_writer.h"
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

// Records `events` through a StoreWriter into `path` (no failure) and returns the last run's id.
inline int64_t record_events(const std::filesystem::path& path, const std::vector<Event>& events) {
    StoreWriter w(path);
    for (const Event& e : events) w.record(e);
    w.flush();
    EXPECT_EQ(w.failures(), 0);
    return w.last_run_id();
}

// SQL that takes a current file back to schema version 10 (before the remote runs' alternatives
// texts and server loads): what the tests that fake an older file run first.
inline constexpr const char* kBackToV10 =
    "ALTER TABLE tokens DROP COLUMN top_text; DROP TABLE server_loads; ";

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

// A step's trace as level Trace records it, inside [start_ns, start_ns + 900): the embedding, two
// layers of (norm, QKV matmul, attention, FFN down matmul), the LM head, each op 60 ns after a
// 10 ns gap; two threads: worker 0's tasks and wait under each matmul, worker 1's tasks beside.
inline std::shared_ptr<const StepTrace> synthetic_trace(int64_t start_ns, int32_t rows = 1) {
    auto t = std::make_shared<StepTrace>();
    t->names = {"get_rows(token_embd)",
                "rms_norm(attn_norm)",
                "attn_q+attn_k+attn_v",
                "attention",
                "ffn_down",
                "lm_head(output)"};
    t->threads = 2;
    int64_t at = start_ns + 10;
    const auto op = [&](int32_t name, int32_t layer, TimeCategory c, double bytes, double flops) {
        OpSpan s{at, at + 60, name, layer, rows, c, bytes, flops};
        if (c == TimeCategory::Matmul || c == TimeCategory::LmHead) {
            s.weight_type = int32_t(GgmlType::Q4_1);
            s.shape = {64, int32_t(bytes / 20)};
        }
        t->ops.push_back(s);
        if (bytes > 0) {
            t->workers.push_back({at + 5, at + 40, 0, 3});
            t->workers.push_back({at + 40, at + 55, 0, 0});
            t->workers.push_back({at + 6, at + 50, 1, 2});
        }
        at += 70;
    };
    op(0, -1, TimeCategory::Other, 0, 0);
    for (int32_t layer = 0; layer < 2; ++layer) {
        op(1, layer, TimeCategory::NormRope, 0, 0);
        op(2, layer, TimeCategory::Matmul, 6000, 4000 * rows);
        op(3, layer, TimeCategory::Attention, 1200, 800 * rows);
        op(4, layer, TimeCategory::Matmul, 3000, 2000 * rows);
    }
    op(5, -1, TimeCategory::LmHead, 12000, 8000 * rows);
    return t;
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
    PrefixCacheEvent pc;
    pc.run = run;
    pc.prompt_tokens = 9;
    pc.computed_tokens = 9;
    pc.t_ns = 900;
    ev.push_back(pc);
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

// A synthetic run with every field added in schema v3: the prompt's ids and pieces (one of them
// a lone UTF-8 lead byte), a speculative step with bonus token and timings, an attention snapshot
// whose keys start past 0, attention stats at two steps (recorded out of time order) and the
// speculative totals in RunFinished.
inline std::vector<Event> v3_run(uint64_t run, uint64_t conversation) {
    std::vector<Event> ev =
        synthetic_run(run, conversation, RunKind::Send, 0, "spec?", {"x", "y", "z"});
    auto& start = std::get<RunStarted>(ev.front());
    start.prompt_ids = {1, 529, 9999, 13};
    start.prompt_pieces = {"<s>", "<|user|>", std::string("\xE4"), "\n"};
    RunFinished fin = std::get<RunFinished>(ev.back());
    ev.pop_back();
    fin.drafted_tokens = 7;
    fin.accepted_tokens = 5;
    SpecStep sp;
    sp.run = run;
    sp.step = 1;
    sp.drafter = "prompt-lookup";
    sp.drafted = {{21, 0.5f, 0.25f, true}, {22, 1.0f, 0.125f, false}};
    sp.accepted = 1;
    sp.resampled = 23;
    sp.bonus = 24;
    sp.draft_ns = 150;
    sp.verify_ns = 600;
    sp.t_ns = 1980;
    ev.push_back(sp);
    auto at = std::make_shared<AttentionSnapshot>();
    at->run = run;
    at->step = 2;
    at->layer = 3;
    at->head = 1;
    at->first_row = 11;
    at->n_rows = 1;
    at->n_cols = 3;
    at->key_begin = 8;
    at->weights = {0.25f, 0.5f, 0.25f};
    at->t_ns = 2960;
    ev.push_back(std::shared_ptr<const AttentionSnapshot>(at));
    for (int64_t step : {2, 1}) {  // the later step first: replay must order them by time
        AttentionStats st;
        st.run = run;
        st.step = step;
        st.n_layer = 2;
        st.n_head = 3;
        st.top_k = 4;
        st.threshold = 0.01f;
        st.n_keys = 9 + step;
        for (int i = 0; i < 6; ++i)
            st.heads.push_back({0.5f * float(i) + float(step), 0.75f, 0.125f * float(i), 0.0625f});
        st.t_ns = step * 1000 + 970;
        ev.push_back(st);
    }
    ev.push_back(fin);
    return ev;
}

// A synthetic run under a StreamingLLM-like policy (budget 6, 2 sinks): the prefill cached
// positions 0..7, step 1 evicted 2..4 (kept sinks 0, 1 and recent 5..7), step 3 evicted 5..6.
inline std::vector<Event> kv_eviction_run(uint64_t run, uint64_t conversation) {
    std::vector<Event> ev =
        synthetic_run(run, conversation, RunKind::Send, 0, "long?", {"a", "b", "c", "d"});
    const RunFinished fin = std::get<RunFinished>(ev.back());
    ev.pop_back();
    KvEviction e;
    e.run = run;
    e.step = 1;
    e.policy = "streaming";
    e.budget = 6;
    e.length_before = 8;
    e.evicted = {2, 3, 4};
    e.kept = {0, 1, 5, 6, 7};
    e.reasons = {0, 0, 1, 1, 1};
    e.ms = 0.125;
    e.t_ns = 1925;
    ev.push_back(e);
    e.step = 3;
    e.length_before = 6;
    e.evicted = {5, 6};
    e.kept = {0, 1, 7, 8};
    e.reasons = {0, 0, 1, 2};
    e.ms = 0.25;
    e.t_ns = 3925;
    ev.push_back(e);
    ev.push_back(fin);
    return ev;
}

}  // namespace fluoro::app::test
