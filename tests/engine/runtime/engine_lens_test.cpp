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
using test::next_answer;
using test::next_run;

// `path` loaded on 2 threads with a 512-token context, greedy, replies of `max_tokens`.
void load_greedy(Engine& e, const std::filesystem::path& path, int64_t max_tokens) {
    LoadModel load{path, {}};
    load.settings.threads = 2;
    load.settings.ctx = 512;
    e.submit_blocking(load);
    SamplingParams greedy;
    greedy.temperature = 0;
    e.submit(ChangeSettings{greedy, max_tokens, std::nullopt});
}

std::shared_ptr<const LogitLensEvent> next_lens(Engine& e) {
    return next_answer<LogitLensEvent>(e);
}

TEST(EngineLens, TheLatestRunsTokensAndTheReasonsForTheRest) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    Engine engine({TelemetryLevel::Summary});
    load_greedy(engine, path, 6);
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

namespace fluoro {
namespace {

std::shared_ptr<const AttentionOverview> next_overview(Engine& e) {
    return next_answer<AttentionOverview>(e);
}

// The overview of a token re-runs its decode step: every head's row equals, bit for bit, the row
// the attention capture took from that step while the run ran (layer 3, all heads, captured live).
TEST(EngineOverview, EveryHeadsRowIsTheLiveStepsAndPatternsAreNamed) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    Engine engine({TelemetryLevel::Summary});
    load_greedy(engine, path, 8);
    engine.submit(SetAttentionCapture{{{3, -1, 1, 0, 0}}, false});
    // A repeated sequence: induction heads have something to find.
    engine.submit(SendMessage{"Repeat after me: red fox blue cat green owl. red fox blue cat"});
    const auto events = next_run(engine);
    const RunStarted rs = all_of<RunStarted>(events).at(0);
    const auto tokens = all_of<TokenEvent>(events);
    ASSERT_GE(tokens.size(), 4u);
    const int64_t i = 2;  // fed by decode step 3 (step 0 is the prefill)
    const int64_t pos = int64_t(rs.prompt_ids.size()) + i;
    std::vector<std::shared_ptr<const AttentionSnapshot>> live;
    for (const auto& s : all_of<std::shared_ptr<const AttentionSnapshot>>(events))
        if (s->layer == 3 && s->first_row + s->n_rows - 1 == pos) live.push_back(s);
    ASSERT_EQ(live.size(), 9u) << "the live capture of layer 3 at position " << pos;

    engine.submit(ComputeAttentionOverview{rs.run, i});
    const auto ov = next_overview(engine);
    ASSERT_TRUE(ov);
    ASSERT_EQ(ov->error, "");
    EXPECT_EQ(ov->position, pos);
    EXPECT_EQ(ov->n_layer, 30);
    EXPECT_EQ(ov->n_head, 9);
    ASSERT_EQ(ov->key_pieces.size(), size_t(pos + 1));
    EXPECT_EQ(ov->key_pieces.back(), tokens[size_t(i)].piece);
    for (const auto& s : live) {
        const std::span<const float> row = ov->row(3, s->head);
        const float* want = s->weights.data() + (s->n_rows - 1) * s->n_cols;
        for (int64_t k = 0; k < s->n_cols; ++k)
            ASSERT_EQ(row[size_t(s->key_begin + k)], want[k])
                << "layer 3 head " << s->head << " key " << s->key_begin + k;
    }
    int labels[7] = {};
    for (int32_t l = 0; l < ov->n_layer; ++l)
        for (int32_t h = 0; h < ov->n_head; ++h) {
            double sum = 0;
            for (const float w : ov->row(l, h)) sum += w;
            // Softmax rows in float: 1 within accumulated rounding (~pos x 2^-24).
            EXPECT_NEAR(sum, 1.0, 1e-4) << "layer " << l << " head " << h;
            ++labels[int(ov->head(l, h).label)];
        }
    std::printf(
        "[overview] %lld keys: induction %d previous %d self %d sink %d local %d "
        "diffuse %d mixed %d; %.1f ms\n",
        static_cast<long long>(pos + 1), labels[0], labels[1], labels[2], labels[3], labels[4],
        labels[5], labels[6], ov->ms);

    engine.submit(ComputeAttentionOverview{rs.run, int64_t(tokens.size()) - 1});
    const auto last = next_overview(engine);
    ASSERT_TRUE(last);
    EXPECT_NE(last->error.find("was never fed to the model"), std::string::npos) << last->error;
}

}  // namespace
}  // namespace fluoro
