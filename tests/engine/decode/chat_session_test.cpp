// Multi-turn chat on the real SmolLM2: later turns reuse the KV of earlier ones (no re-prefill of
// the history), generation is reproducible from a seed, user-typed special-token text stays text,
// and bad input gives clear errors with the session still usable.
#include "decode/chat_session.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "engine/model/model_fixture.h"

namespace fluoro {
namespace {

struct Chat {
    explicit Chat(Model& m, SamplingParams p = greedy())
        : kv(m.create_kv(2048, 1, KvType::F16)), seq(m, *kv, 0), chat(m, seq, p) {}
    static SamplingParams greedy() {
        SamplingParams p;
        p.temperature = 0;
        return p;
    }
    std::unique_ptr<KvCache> kv;
    Sequence seq;
    ChatSession chat;
};

Model* smollm2() {
    auto* lm = test::shared_model(test::models_dir() / test::kSmolLM2File);
    return lm ? lm->model.get() : nullptr;
}

TEST(ChatSession, SecondTurnReusesTheFirstTurnsKv) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    Chat c(*smollm2());
    GenerateOptions opt;
    opt.max_tokens = 24;
    const GenerateResult t1 = c.chat.send("What is the capital of France?", opt);
    EXPECT_EQ(t1.prefill.reused_tokens, 0);
    EXPECT_GT(t1.tokens.size(), 0u);
    const int64_t cached_after_t1 = int64_t(c.seq.tokens().size());
    const GenerateResult t2 = c.chat.send("And of Italy?", opt);
    std::printf(
        "[ chat ] turn 1: %lld prompt tokens; turn 2: %lld prompt tokens, %lld reused, %lld "
        "computed\n",
        static_cast<long long>(t1.prefill.prompt_tokens),
        static_cast<long long>(t2.prefill.prompt_tokens),
        static_cast<long long>(t2.prefill.reused_tokens),
        static_cast<long long>(t2.prefill.computed_tokens));
    // Everything turn 1 left in the cache (its prompt and answer) is reused, or all but the few
    // answer tokens whose re-tokenized text differs from the sampled ids.
    EXPECT_GE(t2.prefill.reused_tokens, t1.prefill.prompt_tokens);
    EXPECT_GE(t2.prefill.reused_tokens, cached_after_t1 - 4);
    EXPECT_LT(t2.prefill.computed_tokens, 24);
    EXPECT_EQ(c.chat.messages().size(), 4u);
}

TEST(ChatSession, SameSeedSameText) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    SamplingParams p;
    p.temperature = 0.9f;
    p.seed = 1234;
    GenerateOptions opt;
    opt.max_tokens = 20;
    Chat a(*smollm2(), p), b(*smollm2(), p);
    const std::string ta = a.chat.send("Tell me a story.", opt).text;
    const std::string tb = b.chat.send("Tell me a story.", opt).text;
    EXPECT_EQ(ta, tb);
    p.seed = 99;
    Chat c(*smollm2(), p);
    EXPECT_NE(c.chat.send("Tell me a story.", opt).text, ta);  // 20 tokens at T=0.9: differs
}

TEST(ChatSession, UserTypedSpecialTokensStayText) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    Model& m = *smollm2();
    const std::vector<ChatMessage> msgs{{"user", "say <|im_end|> please"}};
    const auto ids =
        tokenize_chat(m, msgs, chat_options_from_template(m.chat_template_text()), true);
    const int32_t im_end = m.tokenizer().vocab().eos();  // <|im_end|> = 2 in SmolLM2
    // The template's own <|im_end|> closes the system and user turns: exactly two, none from the
    // user's text.
    EXPECT_EQ(std::count(ids.begin(), ids.end(), im_end), 2);
    EXPECT_NE(m.tokenizer().decode(ids, true).find("say <|im_end|> please"), std::string::npos);
}

TEST(ChatSession, BadInputIsAClearErrorAndTheSessionContinues) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    Chat c(*smollm2());
    GenerateOptions opt;
    opt.max_tokens = 4;
    try {
        c.chat.send(std::string("bad \xff utf-8"), opt);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("UTF-8"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(c.chat.messages().empty());  // the failed turn left no trace
    EXPECT_NO_THROW(c.chat.send("Hello!", opt));
    EXPECT_EQ(c.chat.messages().size(), 2u);
}

TEST(ChatSession, CancelStopsWithinAStep) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    Chat c(*smollm2());
    std::atomic<bool> cancel{false};
    GenerateOptions opt;
    opt.max_tokens = 100;
    int seen = 0;
    const GenerateResult r = c.chat.send(
        "Count to one hundred.", opt,
        [&](const GeneratedToken&) {
            if (++seen == 3) cancel.store(true);
        },
        &cancel);
    EXPECT_EQ(r.stop, StopReason::Cancelled);
    EXPECT_EQ(r.tokens.size(), 3u);
}

}  // namespace
}  // namespace fluoro
