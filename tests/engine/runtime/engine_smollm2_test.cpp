// The Engine drives the same generation code as a plain generate(): on the real SmolLM2, the same
// sampling settings and seed give the same reply through the Engine's thread and event stream as
// generate() on the chat prompt, and the streamed token pieces add up to it. A raw completion
// (Complete::raw, `fluoro run --raw`) gives exactly the tokens of generate() on the plain text.
#include <gtest/gtest.h>

#include "chat/chat_options.h"
#include "decode/chat_tokenize.h"
#include "decode/generate.h"
#include "decode/sequence.h"
#include "engine/model/model_fixture.h"
#include "engine/runtime/engine_test_events.h"
#include "runtime/engine.h"

namespace fluoro {
namespace {

using namespace std::chrono_literals;

// generate() on its own Sequence of the shared model: the reference the Engine must match.
GenerateResult direct_generate(const std::filesystem::path& path,
                               const std::vector<int32_t>& prompt, const SamplingParams& p,
                               int64_t max_tokens) {
    auto* lm = test::shared_model(path);
    auto kv = lm->model->create_kv(1024, 1, KvType::F16);
    Sequence seq(*lm->model, *kv, 0);
    Sampler sampler(p, int32_t(lm->model->n_vocab()));
    GenerateOptions opt;
    opt.max_tokens = max_tokens;
    return generate(seq, lm->model->tokenizer(), prompt, sampler, opt);
}

ModelSettings small_context() {
    ModelSettings ms;
    ms.threads = 2;
    ms.ctx = 1024;
    return ms;
}

TEST(EngineSmolLM2, SameReplyAsGenerate) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    SamplingParams p;
    p.seed = 11;
    const Model& m = *test::shared_model(path)->model;
    const std::vector<ChatMessage> msgs{{"user", "Name three fruits."}};
    const GenerateResult direct = direct_generate(path, tokenize_chat(m, msgs, true), p, 16);

    Engine engine({TelemetryLevel::Full});
    engine.submit(ChangeSettings{p, 16, std::nullopt});
    engine.submit_blocking(LoadModel{path, small_context()});
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

TEST(EngineSmolLM2, RawCompletionGivesTheTokensOfGenerate) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    SamplingParams p;
    p.temperature = 0;
    const std::string text = "Once upon a time, in a quiet village by the sea,";
    const Model& m = *test::shared_model(path)->model;
    const std::vector<int32_t> prompt = m.tokenizer().encode(text, true, false);
    const GenerateResult direct = direct_generate(path, prompt, p, 24);

    Engine engine({TelemetryLevel::Summary});
    // A system prompt set for chats must not reach a raw prompt.
    engine.submit(ChangeSettings{p, 24, std::string("You are a pirate.")});
    engine.submit_blocking(LoadModel{path, small_context()});
    Complete raw{{{"user", text}}};
    raw.raw = true;
    engine.submit(raw);
    const auto run = test::next_run(engine);
    const RunStarted rs = test::all_of<RunStarted>(run).at(0);
    EXPECT_TRUE(rs.raw);
    EXPECT_EQ(rs.prompt_ids, prompt);
    EXPECT_EQ(rs.system_prompt, "");
    std::vector<int32_t> ids;
    for (const TokenEvent& t : test::all_of<TokenEvent>(run))
        if (t.id >= 0) ids.push_back(t.id);
    EXPECT_EQ(ids, direct.tokens);
    const auto& fin = std::get<RunFinished>(run.back());
    EXPECT_EQ(fin.text, direct.text);
    EXPECT_EQ(fin.stop, std::string(stop_reason_name(direct.stop)));
    // The chat afterwards is templated again.
    engine.submit(SendMessage{"Hi"});
    const auto chat = test::next_run(engine);
    EXPECT_FALSE(test::all_of<RunStarted>(chat).at(0).raw);
}

}  // namespace
}  // namespace fluoro
