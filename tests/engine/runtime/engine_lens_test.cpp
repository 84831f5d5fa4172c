// ComputeLogitLens through the engine: the lens of a token of the live conversation's latest run
// arrives as a LogitLensEvent whose last layer is the distribution the token was sampled from
// (greedy: its top token), and every request it cannot answer says why instead.
#include <gtest/gtest.h>

#include <chrono>

#include "engine/runtime/engine_test_events.h"
#include "runtime/engine.h"
#include "test_models.h"

namespace fluoro {
namespace {

using test::all_of;
using test::next_run;

std::shared_ptr<const LogitLensEvent> next_lens(Engine& e) {
    using namespace std::chrono_literals;
    const auto deadline = std::chrono::steady_clock::now() + 120s;  // hang guard, not a bound
    while (std::chrono::steady_clock::now() < deadline) {
        auto ev = e.events().pop(100ms);
        if (!ev) continue;
        if (auto* l = std::get_if<std::shared_ptr<const LogitLensEvent>>(&*ev)) return *l;
    }
    ADD_FAILURE() << "no LogitLensEvent within the hang guard";
    return nullptr;
}

TEST(EngineLens, TheLatestRunsTokensAndTheReasonsForTheRest) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    Engine engine({TelemetryLevel::Summary});
    LoadModel load{path, {}};
    load.settings.threads = 2;
    load.settings.ctx = 512;
    engine.submit_blocking(load);
    SamplingParams greedy;
    greedy.temperature = 0;
    engine.submit(ChangeSettings{greedy, 6, std::nullopt});
    engine.submit(SendMessage{"What is the capital of France?"});
    const auto events = next_run(engine);
    const RunStarted rs = all_of<RunStarted>(events).at(0);
    const auto tokens = all_of<TokenEvent>(events);
    ASSERT_GE(tokens.size(), 3u);

    for (const int64_t i : {int64_t(0), int64_t(2), int64_t(tokens.size()) - 1}) {
        engine.submit(ComputeLogitLens{rs.run, i, 5});
        const auto lens = next_lens(engine);
        ASSERT_TRUE(lens);
        ASSERT_EQ(lens->error, "") << "token " << i;
        EXPECT_EQ(lens->run, rs.run);
        EXPECT_EQ(lens->token, i);
        EXPECT_EQ(lens->position, int64_t(rs.prompt_ids.size()) + i - 1);
        EXPECT_EQ(lens->target, tokens[size_t(i)].id);
        ASSERT_EQ(lens->layers.size(), 30u);  // SmolLM2-135M's layers
        ASSERT_EQ(lens->pieces.size(), 30u);
        // Greedy: the token is the top of the model's output, i.e. of the lens' last layer.
        EXPECT_EQ(lens->layers.back().top.at(0).id, tokens[size_t(i)].id) << "token " << i;
        EXPECT_EQ(lens->layers.back().target_rank, 0);
        EXPECT_EQ(lens->pieces.back().at(0), tokens[size_t(i)].piece);
        EXPECT_EQ(lens->layers.back().top.size(), 5u);
        EXPECT_GT(lens->ms, 0.0);
    }

    const auto refused = [&](ComputeLogitLens c, const std::string& why) {
        engine.submit(c);
        const auto lens = next_lens(engine);
        ASSERT_TRUE(lens);
        EXPECT_NE(lens->error.find(why), std::string::npos) << lens->error;
        EXPECT_TRUE(lens->layers.empty());
    };
    refused({rs.run, int64_t(tokens.size()), 5}, "there is no token");
    refused({rs.run + 7, 0, 5}, "is not the live conversation's latest run");
    refused({rs.run, 0, 0}, "top_k 0");
    // A later run: the earlier one's tokens are no longer the latest the cache holds.
    engine.submit(NewConversation{});
    engine.submit(SendMessage{"Hi"});
    const RunStarted later = all_of<RunStarted>(next_run(engine)).at(0);
    refused({rs.run, 1, 5}, "(run " + std::to_string(later.run) + " is)");
}

}  // namespace
}  // namespace fluoro
