// The eviction policies as pure decisions (kv/kv_policy.h): what each keeps, and the invariants
// every decision must hold — the budget is never exceeded, sinks and the recent window are always
// kept, kept and evicted partition the cache — over randomized inputs.
#include "kv/kv_policy.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "core/error.h"

namespace fluoro {
namespace {

KvPolicyConfig config(KvPolicyKind kind, int64_t budget, int64_t sinks = 4, int64_t recent = 0,
                      int64_t chunk = 0) {
    KvPolicyConfig c;
    c.kind = kind;
    c.budget = budget;
    c.sinks = sinks;
    c.recent = recent;
    c.evict_chunk = chunk;
    return c;
}

std::vector<int64_t> range(int64_t a, int64_t b) {
    std::vector<int64_t> v;
    for (int64_t i = a; i < b; ++i) v.push_back(i);
    return v;
}

TEST(KvPolicy, NamesRoundTrip) {
    for (const char* n : {"full", "window", "streaming", "h2o", "scissorhands", "snapkv"}) {
        const auto k = parse_kv_policy(n);
        ASSERT_TRUE(k) << n;
        EXPECT_EQ(kv_policy_name(*k), n);
    }
    EXPECT_FALSE(parse_kv_policy("lru"));
}

TEST(KvPolicy, NothingToDoWhileTheBudgetHolds) {
    EXPECT_FALSE(kv_decide(config(KvPolicyKind::Window, 64), 1024, {63, 1, {}, {}, {}}));
    EXPECT_FALSE(kv_decide(config(KvPolicyKind::Full, 0), 64, {60, 4, {}, {}, {}}));
}

TEST(KvPolicy, FullStopsWithAClearMessage) {
    try {
        kv_decide(config(KvPolicyKind::Full, 0), 64, {64, 1, {}, {}, {}});
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("budget of 64"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("streaming"), std::string::npos) << e.what();
    }
}

TEST(KvPolicy, WindowKeepsTheMostRecent) {
    // Budget 32, chunk 4: 32 cached + 1 incoming -> keep 28 = slots 4..31.
    const auto d = kv_decide(config(KvPolicyKind::Window, 32, 4, 0, 4), 1024, {32, 1, {}, {}, {}});
    ASSERT_TRUE(d);
    EXPECT_EQ(d->keep, range(4, 32));
    EXPECT_EQ(d->evicted, range(0, 4));
    for (KvKeepReason r : d->reasons) EXPECT_EQ(r, KvKeepReason::Recent);
}

TEST(KvPolicy, StreamingKeepsSinksAndTheMostRecent) {
    const auto d =
        kv_decide(config(KvPolicyKind::Streaming, 32, 4, 0, 4), 1024, {32, 1, {}, {}, {}});
    ASSERT_TRUE(d);
    std::vector<int64_t> want = range(0, 4);
    for (int64_t j : range(8, 32)) want.push_back(j);
    EXPECT_EQ(d->keep, want);
    EXPECT_EQ(d->evicted, range(4, 8));
    EXPECT_EQ(d->reasons[0], KvKeepReason::Sink);
    EXPECT_EQ(d->reasons.back(), KvKeepReason::Recent);
}

TEST(KvPolicy, H2OKeepsTheHeavyHitters) {
    // Budget 32, 4 sinks, 8 recent, chunk 8: keep 24 = 4 sinks + 12 heavy + 8 recent.
    std::vector<float> att(32, 0.0f);
    const std::vector<int64_t> heavy{5, 6, 7, 9, 10, 11, 12, 13, 15, 16, 17, 20};
    for (int64_t j : heavy) att[size_t(j)] = 1.0f + float(j);
    att[30] = 100.0f;  // recent anyway
    const auto d = kv_decide(config(KvPolicyKind::H2O, 32, 4, 8, 8), 1024, {32, 1, att, {}, {}});
    ASSERT_TRUE(d);
    std::vector<int64_t> want = range(0, 4);
    want.insert(want.end(), heavy.begin(), heavy.end());
    for (int64_t j : range(24, 32)) want.push_back(j);
    EXPECT_EQ(d->keep, want);
    EXPECT_EQ(d->reasons[4], KvKeepReason::Heavy);
}

TEST(KvPolicy, ScissorhandsEvictsTheOftenUnimportant) {
    std::vector<float> low(32, 5.0f);
    for (int64_t j : {4, 8, 12, 16}) low[size_t(j)] = 9.0f;  // most often below average
    const auto d =
        kv_decide(config(KvPolicyKind::Scissorhands, 32, 4, 8, 4), 1024, {32, 1, {}, low, {}});
    ASSERT_TRUE(d);
    EXPECT_EQ(d->evicted, (std::vector<int64_t>{4, 8, 12, 16}));
}

TEST(KvPolicy, SnapKVPoolsTheObservedAttention) {
    // One strongly observed slot (14) keeps its pooled neighbours (kernel 3: 13, 14, 15).
    std::vector<float> observed(32, 0.0f), att(32, 0.0f);
    observed[14] = 1.0f;
    KvPolicyConfig c = config(KvPolicyKind::SnapKV, 32, 4, 9, 16);
    c.pool = 3;  // keep 16 = 4 sinks + 3 observed + 9 recent
    const auto d = kv_decide(c, 1024, {32, 1, att, {}, observed});
    ASSERT_TRUE(d);
    std::vector<int64_t> want = range(0, 4);
    for (int64_t j : {13, 14, 15}) want.push_back(j);
    for (int64_t j : range(23, 32)) want.push_back(j);
    EXPECT_EQ(d->keep, want);
}

TEST(KvPolicy, ScoringPoliciesRefuseMissingScores) {
    for (KvPolicyKind k : {KvPolicyKind::H2O, KvPolicyKind::Scissorhands, KvPolicyKind::SnapKV})
        EXPECT_THROW(kv_decide(config(k, 32), 1024, {32, 1, {}, {}, {}}), Error)
            << kv_policy_name(k);
}

TEST(KvPolicy, ProblemsAreNamed) {
    EXPECT_EQ(config(KvPolicyKind::Streaming, 64).problem(128), "");
    EXPECT_NE(config(KvPolicyKind::Streaming, 256).problem(128), "");    // budget > context
    EXPECT_NE(config(KvPolicyKind::Streaming, 4).problem(128), "");      // too small
    EXPECT_NE(config(KvPolicyKind::Streaming, 16, 8).problem(128), "");  // sinks fill it
    EXPECT_NE(config(KvPolicyKind::Full, -1).problem(128), "");
}

TEST(KvPolicy, LowCountDecaysAndCountsBelowAverage) {
    std::vector<float> low{0, 0, 0, 0};
    const std::vector<float> step{0.7f, 0.1f, 0.1f, 0.1f};  // mean 0.25
    kv_update_low_count(low, step, 2);
    EXPECT_EQ(low, (std::vector<float>{0, 1, 1, 1}));
    kv_update_low_count(low, step, 2);  // decay 1/2 then +1
    EXPECT_EQ(low, (std::vector<float>{0, 1.5f, 1.5f, 1.5f}));
}

// Randomized: every policy, budget, length and score pattern holds the invariants.
TEST(KvPolicy, DecisionsHoldTheirInvariants) {
    std::mt19937_64 rng(7);
    const KvPolicyKind kinds[] = {KvPolicyKind::Window, KvPolicyKind::Streaming, KvPolicyKind::H2O,
                                  KvPolicyKind::Scissorhands, KvPolicyKind::SnapKV};
    for (int iter = 0; iter < 3000; ++iter) {
        const KvPolicyKind kind = kinds[rng() % 5];
        const int64_t budget = 16 + int64_t(rng() % 300);
        const int64_t sinks = int64_t(rng() % 5), recent = int64_t(rng() % 40);
        const int64_t chunk = int64_t(rng() % 20);
        KvPolicyConfig c = config(kind, budget, sinks, recent, chunk);
        const int64_t n_ctx = budget + int64_t(rng() % 100);
        ASSERT_EQ(c.problem(n_ctx), "");
        const int64_t incoming = 1 + int64_t(rng() % uint64_t(budget / 2));
        const int64_t length = budget - incoming + 1 + int64_t(rng() % 50);
        const auto n = static_cast<size_t>(length);
        std::vector<float> att(n), low(n), obs(n);
        for (int64_t j = 0; j < length; ++j) {
            att[size_t(j)] = float(rng() % 1000) / 100.0f;
            low[size_t(j)] = float(rng() % 7);
            obs[size_t(j)] = (rng() % 3 == 0) ? float(rng() % 100) : 0.0f;
        }
        const std::vector<float> none;
        const auto d = kv_decide(c, n_ctx, {length, incoming, att, low, iter % 2 ? obs : none});
        ASSERT_TRUE(d) << iter;
        const std::string ctx = std::string(kv_policy_name(kind)) + " budget " +
                                std::to_string(budget) + " length " + std::to_string(length) +
                                " incoming " + std::to_string(incoming);
        EXPECT_LE(int64_t(d->keep.size()) + incoming, budget) << ctx;
        EXPECT_EQ(d->keep.size() + d->evicted.size(), size_t(length)) << ctx;
        EXPECT_EQ(d->reasons.size(), d->keep.size()) << ctx;
        std::set<int64_t> all(d->keep.begin(), d->keep.end());
        all.insert(d->evicted.begin(), d->evicted.end());
        EXPECT_EQ(all.size(), size_t(length)) << ctx;
        EXPECT_TRUE(std::is_sorted(d->keep.begin(), d->keep.end())) << ctx;
        const std::set<int64_t> kept(d->keep.begin(), d->keep.end());
        if (kind != KvPolicyKind::Window) {
            for (int64_t j = 0; j < std::min(sinks, int64_t(d->keep.size())); ++j)
                EXPECT_TRUE(kept.count(j)) << ctx << ": sink " << j << " evicted";
        }
        // The most recent tokens the policy protects are kept.
        const int64_t kept_n = int64_t(d->keep.size());
        const int64_t sink_n = kind == KvPolicyKind::Window ? 0 : std::min(sinks, kept_n);
        const int64_t protect = kind == KvPolicyKind::Window || kind == KvPolicyKind::Streaming
                                    ? kept_n - sink_n
                                    : std::min(c.effective_recent(n_ctx), kept_n - sink_n);
        for (int64_t j = length - protect; j < length; ++j)
            EXPECT_TRUE(kept.count(j)) << ctx << ": recent " << j << " evicted";
    }
}

}  // namespace
}  // namespace fluoro
