// The unbounded prefix-cache replay and its radix tree against a brute-force reference on random
// prompts, and the what-if rewrite of one prompt.
#include "advisor/cache_simulation.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "advisor/prompt_advisor.h"
#include "advisor/stable_first.h"

namespace fluoro::app {
namespace {

int64_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    int64_t n = 0;
    while (size_t(n) < a.size() && size_t(n) < b.size() && a[size_t(n)] == b[size_t(n)]) ++n;
    return n;
}

// Random prompts from a few shared stems, so that they share prefixes of every length.
std::vector<std::vector<int32_t>> random_prompts(std::mt19937& rng, size_t n) {
    std::vector<std::vector<int32_t>> out;
    std::uniform_int_distribution<int> len(0, 40), tok(0, 3), pick(0, 3);
    for (size_t i = 0; i < n; ++i) {
        std::vector<int32_t> p;
        if (!out.empty() && pick(rng) > 0) {  // start from an earlier prompt's prefix
            const auto& from = out[std::uniform_int_distribution<size_t>(0, out.size() - 1)(rng)];
            p.assign(from.begin(),
                     from.begin() + std::uniform_int_distribution<long>(0, long(from.size()))(rng));
        }
        for (int k = len(rng); k > 0; --k) p.push_back(tok(rng));
        out.push_back(std::move(p));
    }
    return out;
}

TEST(CacheSimulation, MatchesBruteForceOnRandomPrompts) {
    std::mt19937 rng(7);
    for (int round = 0; round < 20; ++round) {
        const auto prompts = random_prompts(rng, 60);
        std::vector<int64_t> lengths;
        for (const auto& p : prompts) lengths.push_back(int64_t(p.size()));
        PromptTrie trie(prompts);
        const CacheSimulation sim = simulate_prefix_cache(trie, prompts, lengths);
        trie.check_invariants();
        int64_t cached = 0;
        for (size_t i = 0; i < prompts.size(); ++i) {
            int64_t best = 0, latest = -1;
            for (size_t j = 0; j < i; ++j) {
                const int64_t l = common_prefix(prompts[i], prompts[j]);
                if (l > 0 && l >= best) {
                    best = l;
                    latest = int64_t(j);
                }
            }
            const RequestReuse& r = sim.requests[i];
            ASSERT_EQ(r.shared_tokens, best) << "round " << round << " prompt " << i;
            ASSERT_EQ(
                r.cached_tokens,
                std::max<int64_t>(0, std::min<int64_t>(best, int64_t(prompts[i].size()) - 1)));
            ASSERT_EQ(r.source, latest) << "round " << round << " prompt " << i;
            cached += r.cached_tokens;
        }
        EXPECT_EQ(sim.cached_tokens, cached);
    }
}

TEST(StableFirst, MovesValuesToTheEndAndReplacesRegions) {
    const std::vector<int32_t> ids = {1, 2, 90, 91, 3, 20, 21, 4, 10, 11, 4, 5};
    PromptMarks m;
    m.moved = {{2, 4}};
    m.reordered = {{{5, 10}, "key", {10, 11, 4, 20, 21, 22}}};  // another ordering's tokens
    EXPECT_EQ(stable_first(ids, m),
              (std::vector<int32_t>{1, 2, 3, 10, 11, 4, 20, 21, 22, 4, 5, 90, 91}));
    m.moved = {{6, 7}};  // a value inside the region: the region stays as it is
    EXPECT_EQ(stable_first(ids, m),
              (std::vector<int32_t>{1, 2, 90, 91, 3, 20, 4, 10, 11, 4, 5, 21}));
    EXPECT_EQ(stable_first(ids, {}), ids);
}

// A few thousand requests of a few hundred tokens, each with a changing clock: the analysis is
// linear in the tokens (a trie, not all pairs), so this stays well under a second.
TEST(PromptAdvisor, ThousandsOfRequestsStayFast) {
    std::vector<AdvisorRequest> reqs(3000);
    for (size_t i = 0; i < reqs.size(); ++i) {
        auto& r = reqs[i];
        r.ids = {1, 2, 3, int32_t(1000 + i % 997), int32_t(5000 + i / 997)};
        for (int32_t k = 0; k < 400; ++k) r.ids.push_back(10 + k % 50);
        for (int32_t k = 0; k < 20; ++k) r.ids.push_back(int32_t(100000 + i * 20 + size_t(k)));
    }
    const auto t0 = std::chrono::steady_clock::now();
    const PromptAdvice a = advise_prompt_order(reqs);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(a.recorded.hit_rate_after_first(), 0.01);
    EXPECT_GT(a.what_if.simulation.hit_rate_after_first(), 0.9);
    EXPECT_LT(s, 10.0);  // generous for sanitizer builds; about 0.1 s in release
    RecordProperty("seconds", std::to_string(s));
}

}  // namespace
}  // namespace fluoro::app
