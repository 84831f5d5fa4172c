// The KV policies' traits (settings/settings.h kv_policies(), what the GUI and the CLI help show)
// against what kv_decide does: for every policy, whether it evicts, keeps sinks, needs attention
// scores and reads the recent setting, and the recent window it keeps by default.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "core/error.h"
#include "kv/kv_policy.h"

namespace fluoro {
namespace {

constexpr int64_t kCtx = 1024, kBudget = 256, kSinks = 4;

struct Scores {
    std::vector<float> attention, low, observed;
};

Scores random_scores(int64_t n) {
    std::mt19937 rng(7);
    Scores s;
    for (int64_t j = 0; j < n; ++j) {
        s.attention.push_back(float(rng() % 1000) / 100.0f);
        s.low.push_back(float(rng() % 7));
        s.observed.push_back(float(rng() % 100));
    }
    return s;
}

KvPolicyConfig config(KvPolicyKind kind, int64_t recent = 0) {
    KvPolicyConfig c;
    c.kind = kind;
    c.budget = kBudget;
    c.sinks = kSinks;
    c.recent = recent;
    return c;
}

struct Kept {
    int64_t total = 0, sinks = 0, recent = 0;
};

// kv_decide on a full budget (one more token incoming), with the prefill's observation scores
// when `prefill`; counts the kept slots by reason.
Kept decide(const KvPolicyConfig& c, bool prefill) {
    const Scores s = random_scores(kBudget);
    const std::vector<float> none;
    const auto d =
        kv_decide(c, kCtx, {kBudget, 1, s.attention, s.low, prefill ? s.observed : none});
    Kept k;
    if (!d) return k;
    k.total = int64_t(d->keep.size());
    for (KvKeepReason r : d->reasons) {
        k.sinks += r == KvKeepReason::Sink;
        k.recent += r == KvKeepReason::Recent;
    }
    return k;
}

TEST(KvPolicyTraits, EvictsIsWhetherKvDecideEvictsOrStops) {
    for (const KvPolicyInfo& p : kv_policies()) {
        if (p.evicts) {
            EXPECT_NO_THROW(decide(config(p.kind), true)) << p.name;
        } else {
            EXPECT_THROW(decide(config(p.kind), true), Error) << p.name;
        }
    }
}

TEST(KvPolicyTraits, UsesSinksIsWhatKvDecideKeeps) {
    for (const KvPolicyInfo& p : kv_policies()) {
        if (!p.evicts) continue;
        for (const bool prefill : {true, false}) {
            const Kept k = decide(config(p.kind), prefill);
            EXPECT_EQ(k.sinks, p.uses_sinks ? kSinks : 0) << p.name << " prefill " << prefill;
        }
    }
}

TEST(KvPolicyTraits, NeedsScoresIsWhetherKvDecideReadsThem) {
    const std::vector<float> none;
    for (const KvPolicyInfo& p : kv_policies()) {
        const KvPolicyConfig c = config(p.kind);
        EXPECT_EQ(c.needs_scores(), p.needs_scores) << p.name;
        if (!p.evicts) continue;
        // No scores at all: the scoring policies refuse, the others decide.
        if (p.needs_scores) {
            EXPECT_THROW(kv_decide(c, kCtx, {kBudget, 1, none, none, none}), Error) << p.name;
        } else {
            EXPECT_NO_THROW(kv_decide(c, kCtx, {kBudget, 1, none, none, none})) << p.name;
        }
    }
}

TEST(KvPolicyTraits, DefaultRecentIsWhatKvDecideProtects) {
    const int64_t observe = KvPolicyConfig{}.observe;
    for (const KvPolicyInfo& p : kv_policies()) {
        const KvPolicyConfig c = config(p.kind);
        const int64_t want = p.default_recent(kBudget, observe);
        EXPECT_EQ(c.effective_recent(kCtx), want) << p.name;
        if (!p.evicts) continue;
        const Kept k = decide(c, true);
        EXPECT_EQ(k.recent, std::min(want, k.total - k.sinks)) << p.name;
    }
    // SnapKV selects once, at the prefill; later evictions keep h2o's recent window.
    const Kept later = decide(config(KvPolicyKind::SnapKV), false);
    EXPECT_EQ(later.recent, kv_policy_info(KvPolicyKind::H2O).default_recent(kBudget, observe));
}

TEST(KvPolicyTraits, RecentSettingIsWhetherKvDecideReadsIt) {
    constexpr int64_t kRecent = 10;
    for (const KvPolicyInfo& p : kv_policies()) {
        if (!p.evicts) continue;
        const Kept dflt = decide(config(p.kind), true);
        const Kept set = decide(config(p.kind, kRecent), true);
        EXPECT_EQ(set.recent, p.recent_setting ? kRecent : dflt.recent) << p.name;
        EXPECT_EQ(config(p.kind, kRecent).effective_recent(kCtx),
                  p.recent_setting ? kRecent : p.default_recent(kBudget, KvPolicyConfig{}.observe))
            << p.name;
    }
}

// The words the GUI and the CLI help show for the default recent window say the same rule.
TEST(KvPolicyTraits, DefaultRecentTextSaysTheRule) {
    const int64_t observe = KvPolicyConfig{}.observe;
    for (const KvPolicyInfo& p : kv_policies()) {
        const std::string text(p.default_recent_text);
        ASSERT_FALSE(text.empty()) << p.name;
        if (text.rfind("budget / ", 0) == 0) {
            const int64_t div = std::stoll(text.substr(9));
            EXPECT_EQ(p.default_recent(1000, observe), 1000 / div) << p.name;
        }
    }
    const std::string snap(kv_policy_info(KvPolicyKind::SnapKV).default_recent_text);
    EXPECT_NE(snap.find(std::to_string(observe) + "-token"), std::string::npos) << snap;
    EXPECT_NE(snap.find("budget / 2"), std::string::npos) << snap;  // after the prefill, as h2o
    EXPECT_EQ(kv_policy_info(KvPolicyKind::SnapKV).default_recent(kBudget, observe), observe);
}

}  // namespace
}  // namespace fluoro
