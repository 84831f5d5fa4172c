// A cache whose sliding-window layers keep only their window (KvShape::window_only) gives the
// same logits, bit for bit, as one storing every token: attention reads the same rows in the same
// order (the kernels do not depend on where rows lie: paged_logits_test.cpp), so any difference
// is a row the window layers needed and lost. Over a prefill and decode steps well past the
// window, a cut back within the slack (a rejected draft), and a new prompt diverging behind the
// window, which the window-only sequence computes again from the start.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "backend/cpu/cpu_backend.h"
#include "decode/sequence.h"
#include "kv/paged_kv.h"
#include "kv/prefix_cache.h"
#include "model/model.h"
#include "test_models.h"
#include "test_paths.h"

namespace fluoro {
namespace {

int32_t argmax(std::span<const float> l) {
    return int32_t(std::max_element(l.begin(), l.end()) - l.begin());
}

bool same(std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void expect_window_only_matches_full(Model& m, int64_t ctx, int64_t n_prompt, int64_t n_decode) {
    KvShape full;
    full.n_ctx = ctx;
    full.step_tokens = m.max_batch();
    full.window_slack = 32;
    KvShape win = full;
    win.window_only = true;
    auto kv_full = m.create_kv(full);
    auto kv_win = m.create_kv(win);
    const auto* paged = dynamic_cast<const PagedKvCache*>(kv_win.get());
    ASSERT_NE(paged, nullptr);
    ASSERT_TRUE(paged->window_only()) << "the model has no window layers to keep short";
    EXPECT_LT(kv_win->bytes_allocated(), kv_full->bytes_allocated());
    Sequence a(m, *kv_full, 0), b(m, *kv_win, 0);

    std::vector<int32_t> prompt;
    for (int64_t i = 0; i < n_prompt; ++i) prompt.push_back(int32_t(3 + (i * 37) % 250));
    ASSERT_TRUE(same(a.prefill(prompt), b.prefill(prompt))) << "prefill";
    std::vector<int32_t> reply;
    std::span<const float> la, lb;
    int32_t next = prompt.back();
    for (int64_t i = 0; i < n_decode; ++i) {
        la = a.decode(next);
        lb = b.decode(next);
        ASSERT_TRUE(same(la, lb)) << "decode step " << i;
        reply.push_back(next);
        next = argmax(la);
    }
    const int64_t len = kv_win->length(0);
    EXPECT_GT(kv_win->min_cut_length(0), 0) << "nothing was released: the test is too short";
    EXPECT_LT(kv_win->bytes_used(0), kv_full->bytes_used(0));

    // A rejected draft: 5 slots back, then the same tokens again.
    a.truncate(len - 5);
    b.truncate(len - 5);
    for (size_t i = reply.size() - 5; i < reply.size(); ++i)
        ASSERT_TRUE(same(a.decode(reply[i]), b.decode(reply[i]))) << "after the cut, token " << i;

    // A prompt that leaves the conversation at position 10: the full cache reuses 10 tokens, the
    // window-only one released their window rows and starts over — with the same logits.
    std::vector<int32_t> other(prompt.begin(), prompt.begin() + 10);
    for (int i = 0; i < 20; ++i) other.push_back(int32_t(7 + i));
    PrefillStats sa, sb;
    ASSERT_TRUE(same(a.prefill(other, &sa), b.prefill(other, &sb))) << "diverging prompt";
    EXPECT_EQ(sa.reused_tokens, 10);
    EXPECT_EQ(sb.reused_tokens, 0);
    ASSERT_TRUE(same(a.decode(1), b.decode(1)));
}

// The prefix cache over a window-only cache: a conversation left and resumed whole is restored
// from its entry; one resumed behind its window is a miss (computed from the start). Logits
// equal a full-storage twin's through both, which reuses more.
void expect_prefix_cache_matches_full(Model& m) {
    struct Side {
        std::unique_ptr<KvCache> kv;
        std::unique_ptr<PrefixCache> cache;
        std::unique_ptr<Sequence> seq;
    };
    const auto make = [&](bool window_only) {
        KvShape s;
        s.n_ctx = 512;
        s.n_seq = 3;
        s.pool_tokens = 1024;
        s.step_tokens = m.max_batch();
        s.window_only = window_only;
        Side side;
        side.kv = m.create_kv(s);
        auto* paged = dynamic_cast<PagedKvCache*>(side.kv.get());
        EXPECT_EQ(paged->window_only(), window_only);
        side.cache = std::make_unique<PrefixCache>(*paged, 1, 2);
        side.seq = std::make_unique<Sequence>(m, *side.kv, 0);
        side.seq->set_prefix_cache(side.cache.get());
        return side;
    };
    Side full = make(false), win = make(true);
    std::vector<int32_t> a, b;
    for (int32_t i = 0; i < 150; ++i) a.push_back(3 + (i * 37) % 250);
    for (int32_t i = 0; i < 60; ++i) b.push_back(5 + (i * 11) % 240);
    PrefillStats sf, sw;
    const auto step = [&](std::span<const int32_t> prompt, const char* what) {
        ASSERT_TRUE(same(full.seq->prefill(prompt, &sf), win.seq->prefill(prompt, &sw))) << what;
        int32_t next = 1;
        for (int i = 0; i < 40; ++i) {
            const auto l = full.seq->decode(next);
            ASSERT_TRUE(same(l, win.seq->decode(next))) << what << ", step " << i;
            next = argmax(l);
        }
    };
    step(a, "conversation a");
    const std::vector<int32_t> a_held(full.seq->tokens().begin(), full.seq->tokens().end());
    step(b, "conversation b");  // a goes into the cache
    std::vector<int32_t> a_more = a_held;
    for (int32_t i = 0; i < 8; ++i) a_more.push_back(9 + i);
    step(a_more, "a resumed whole");
    EXPECT_EQ(sw.reused_tokens, int64_t(a_held.size()));
    EXPECT_TRUE(sw.from_prefix_cache);
    std::vector<int32_t> a_early(a.begin(), a.begin() + 20);
    for (int32_t i = 0; i < 8; ++i) a_early.push_back(200 + i);
    step(a_early, "a resumed behind its window");
    EXPECT_EQ(sf.reused_tokens, 20);
    EXPECT_EQ(sw.reused_tokens, 0);
}

// Gemma 2's alternating window of 32 (tests/reference/fixtures/arch_gemma2.gguf).
TEST(SequenceWindowKv, Gemma2FixtureMatchesFullStorage) {
    cpu::CpuBackend be(2);
    ModelLoadOptions o;
    o.max_batch = 48;
    o.max_logit_rows = 1;
    auto m = Model::load(std::filesystem::path(FLUORO_FIXTURES_DIR) / "arch_gemma2.gguf", be, o);
    expect_window_only_matches_full(*m, 512, 150, 60);
    expect_prefix_cache_matches_full(*m);
}

// gpt-oss: window 32 on even layers, attention sinks (arch_gpt_oss.gguf, context 256).
TEST(SequenceWindowKv, GptOssFixtureMatchesFullStorage) {
    cpu::CpuBackend be(2);
    ModelLoadOptions o;
    o.max_batch = 40;
    o.max_logit_rows = 1;
    auto m = Model::load(std::filesystem::path(FLUORO_FIXTURES_DIR) / "arch_gpt_oss.gguf", be, o);
    expect_window_only_matches_full(*m, 256, 120, 50);
}

// The real Gemma 3 270M: 15 of 18 layers over a window of 512.
TEST(SequenceWindowKv, Gemma3MatchesFullStorage) {
    FLUORO_REQUIRE_MODEL(path, test::kGemma3File);
    cpu::CpuBackend be(2);
    ModelLoadOptions o;
    o.max_batch = 256;
    o.max_logit_rows = 1;
    auto m = Model::load(path, be, o);
    expect_window_only_matches_full(*m, 2048, 700, 140);
}

}  // namespace
}  // namespace fluoro
