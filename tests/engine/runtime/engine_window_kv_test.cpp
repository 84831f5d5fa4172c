// The engine's conversation cache keeps only the window of sliding-window layers where nothing
// needs their old rows, and says so in ModelLoaded (bytes allocated against storing every token);
// --swa-full, a prefix cache file and an evicting KV policy keep every token, the reason named.
// Switching to an evicting policy mid-conversation rebuilds the cache (the eviction needs every
// row) and the run goes on past the context; switching back returns to window-only storage.
// On the gemma2 fixture (tests/reference/fixtures/arch_gemma2.gguf: window 32 on even layers).
#include <gtest/gtest.h>

#include <chrono>

#include "engine/runtime/engine_test_events.h"
#include "runtime/engine.h"
#include "test_models.h"
#include "test_temp.h"

namespace fluoro {
namespace {

using test::all_of;
using test::next_answer;
using test::next_run;

LoadModel gemma2(int64_t ctx = 512, int64_t batch = 64) {
    LoadModel load{test::fixtures_dir() / "arch_gemma2.gguf", {}};
    load.settings.threads = 1;
    load.settings.ctx = ctx;
    load.settings.batch = batch;
    return load;
}

ModelLoaded loaded(Engine& e) {
    const auto ev = all_of<ModelLoaded>(e.events().drain());
    EXPECT_EQ(ev.size(), 1u);
    return ev.empty() ? ModelLoaded{} : ev.front();
}

struct Asked {
    RunFinished fin;
    int64_t kv_bytes = 0;  // the cache's allocation during the run (MemoryCounters)
};

Asked ask(Engine& e, int64_t max_tokens) {
    SamplingParams greedy;
    greedy.temperature = 0;
    e.submit(ChangeSettings{greedy, max_tokens, std::nullopt});
    Complete c{{{"user", "the cat sat on the mat and the dog sat on the log"}}};
    c.raw = true;
    e.submit(c);
    const auto events = next_run(e);
    Asked a{std::get<RunFinished>(events.back())};
    const auto mem = all_of<MemoryCounters>(events);
    if (!mem.empty()) a.kv_bytes = mem.back().kv_bytes;
    return a;
}

TEST(EngineWindowKv, WindowLayersKeepOnlyTheirWindowByDefault) {
    Engine e;
    e.submit_blocking(gemma2());
    const ModelLoaded ml = loaded(e);
    EXPECT_EQ(ml.kv_window, 32);
    EXPECT_TRUE(ml.kv_window_note.empty()) << ml.kv_window_note;
    EXPECT_GT(ml.kv_bytes, 0);
    EXPECT_LT(ml.kv_bytes, ml.kv_bytes_if_full);
    const Asked a = ask(e, 120);  // well past window + slack + step
    EXPECT_EQ(a.fin.stop, "max_tokens") << a.fin.error;
    EXPECT_EQ(a.kv_bytes, ml.kv_bytes);
}

TEST(EngineWindowKv, FullStorageWhereAskedOrNeededWithTheReason) {
    {
        Engine e;
        LoadModel l = gemma2();
        l.settings.swa_full = true;
        e.submit_blocking(l);
        const ModelLoaded ml = loaded(e);
        EXPECT_EQ(ml.kv_window, 0);
        EXPECT_EQ(ml.kv_bytes, ml.kv_bytes_if_full);
        EXPECT_NE(ml.kv_window_note.find("--swa-full"), std::string::npos) << ml.kv_window_note;
    }
    {
        Engine e;
        LoadModel l = gemma2();
        l.settings.prefix_cache_slots = 2;
        l.settings.prefix_cache_file = test::unique_temp_path("window_kv_prefix.bin");
        e.submit_blocking(l);
        const ModelLoaded ml = loaded(e);
        EXPECT_EQ(ml.kv_window, 0);
        EXPECT_NE(ml.kv_window_note.find("prefix cache file"), std::string::npos)
            << ml.kv_window_note;
    }
    {  // the prefix cache alone keeps the window (it restores only what the window still holds)
        Engine e;
        LoadModel l = gemma2();
        l.settings.prefix_cache_slots = 2;
        e.submit_blocking(l);
        EXPECT_EQ(loaded(e).kv_window, 32);
        EXPECT_EQ(ask(e, 100).fin.stop, "max_tokens");
        EXPECT_EQ(ask(e, 100).fin.stop, "max_tokens");
    }
}

TEST(EngineWindowKv, AnEvictingPolicyRebuildsTheCacheAndRunsPastTheContext) {
    Engine e;
    // Window storage: (32 + 32 slack + 16 step) / 16 + 2 = 7 blocks of 16, under the context's 12.
    e.submit_blocking(gemma2(192, 16));
    const ModelLoaded ml = loaded(e);
    EXPECT_EQ(ml.kv_window, 32);
    const Asked first = ask(e, 40);
    EXPECT_EQ(first.fin.stop, "max_tokens") << first.fin.error;
    EXPECT_EQ(first.kv_bytes, ml.kv_bytes);
    KvPolicyConfig streaming;
    streaming.kind = KvPolicyKind::Streaming;
    ChangeSettings cs;
    cs.kv_policy = streaming;
    e.submit(cs);
    const Asked evicting = ask(e, 250);  // past the 192-token context: evictions needed
    EXPECT_EQ(evicting.fin.stop, "max_tokens") << evicting.fin.error;
    EXPECT_EQ(evicting.kv_bytes, ml.kv_bytes_if_full);
    cs.kv_policy = KvPolicyConfig{};
    e.submit(cs);
    const Asked back = ask(e, 40);
    EXPECT_EQ(back.fin.stop, "max_tokens") << back.fin.error;
    EXPECT_EQ(back.kv_bytes, ml.kv_bytes);
}

// The logit lens and the attention overview re-run a position of the conversation: behind the
// window of a window-only cache they run on a temporary full one, and answer exactly what an
// engine storing every token answers.
TEST(EngineWindowKv, LensAndOverviewBehindTheWindowEqualFullStorage) {
    std::vector<std::shared_ptr<const LogitLensEvent>> lens;
    std::vector<std::shared_ptr<const AttentionOverview>> overview;
    for (const bool swa_full : {false, true}) {
        Engine e;
        LoadModel l = gemma2();
        l.settings.swa_full = swa_full;
        e.submit_blocking(l);
        EXPECT_EQ(loaded(e).kv_window, swa_full ? 0 : 32);
        SamplingParams greedy;
        greedy.temperature = 0;
        e.submit(ChangeSettings{greedy, 150, std::nullopt});
        Complete c{{{"user", "the cat sat on the mat and the dog sat on the log"}}};
        c.raw = true;
        e.submit(c);
        const auto events = next_run(e);
        const RunStarted rs = all_of<RunStarted>(events).at(0);
        ASSERT_EQ(all_of<TokenEvent>(events).size(), 150u);
        e.submit(ComputeLogitLens{rs.run, 2, 5});  // ~150 tokens behind the end: released rows
        lens.push_back(next_answer<LogitLensEvent>(e));
        e.submit(ComputeAttentionOverview{rs.run, 2});
        overview.push_back(next_answer<AttentionOverview>(e));
    }
    ASSERT_TRUE(lens[0] && lens[1] && overview[0] && overview[1]);
    ASSERT_EQ(lens[0]->error, "");
    ASSERT_EQ(lens[1]->error, "");
    ASSERT_EQ(lens[0]->layers.size(), lens[1]->layers.size());
    for (size_t il = 0; il < lens[0]->layers.size(); ++il) {
        const DistTop& a = lens[0]->layers[il];
        const DistTop& b = lens[1]->layers[il];
        ASSERT_EQ(a.top.size(), b.top.size());
        for (size_t k = 0; k < a.top.size(); ++k) {
            EXPECT_EQ(a.top[k].id, b.top[k].id) << "layer " << il;
            EXPECT_EQ(a.top[k].logprob, b.top[k].logprob) << "layer " << il;
        }
    }
    ASSERT_EQ(overview[0]->error, "");
    ASSERT_EQ(overview[1]->error, "");
    EXPECT_EQ(overview[0]->weights, overview[1]->weights);
}

}  // namespace
}  // namespace fluoro
