// The Engine drives the same generation code as ChatSession: on the real SmolLM2, the same
// sampling settings and seed give the same reply through the Engine's thread and event stream as
// through ChatSession directly, and the streamed token pieces add up to it.
#include <gtest/gtest.h>

#include "decode/chat_session.h"
#include "engine/model/model_fixture.h"
#include "runtime/engine.h"

namespace fluoro {
namespace {

using namespace std::chrono_literals;

TEST(EngineSmolLM2, SameReplyAsChatSession) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    SamplingParams p;
    p.seed = 11;
    GenerateOptions opt;
    opt.max_tokens = 16;
    auto* lm = test::shared_model(path);
    auto kv = lm->model->create_kv(1024, 1, KvType::F16);
    Sequence seq(*lm->model, *kv, 0);
    ChatSession chat(*lm->model, seq, p);
    const GenerateResult direct = chat.send("Name three fruits.", opt);

    Engine engine({TelemetryLevel::Full});
    ModelSettings ms;
    ms.threads = 2;
    ms.ctx = 1024;
    engine.submit(ChangeSettings{p, 16, std::nullopt});
    engine.submit_blocking(LoadModel{path, ms});
    engine.submit(SendMessage{"Name three fruits."});
    std::string streamed;
    std::optional<RunFinished> fin;
    const auto guard = std::chrono::steady_clock::now() + 120s;  // hang guard, not a bound
    while (!fin && std::chrono::steady_clock::now() < guard) {
        auto e = engine.events().pop(100ms);
        if (!e) continue;
        if (const auto* t = std::get_if<TokenEvent>(&*e)) streamed += t->piece;
        if (const auto* f = std::get_if<RunFinished>(&*e)) fin = *f;
    }
    ASSERT_TRUE(fin.has_value());
    EXPECT_EQ(fin->text, direct.text);
    EXPECT_EQ(streamed, direct.text);
    EXPECT_EQ(fin->n_tokens, int64_t(direct.tokens.size()));
    EXPECT_EQ(fin->stop, std::string(stop_reason_name(direct.stop)));
}

}  // namespace
}  // namespace fluoro
