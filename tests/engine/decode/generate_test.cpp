// generate() on the real SmolLM2: a cancel raised from the token callback stops the generation
// before the next step, exactly (the Engine's cancel from another thread is bounded by one step:
// runtime/engine_chat_test.cpp).
#include "decode/generate.h"

#include <gtest/gtest.h>

#include <atomic>

#include "chat/chat_options.h"
#include "decode/chat_tokenize.h"
#include "decode/sequence.h"
#include "engine/model/model_fixture.h"

namespace fluoro {
namespace {

TEST(Generate, CancelStopsWithinAStep) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    Model& m = *test::shared_model(path)->model;
    auto kv = m.create_kv(2048, 1, KvType::F16);
    Sequence seq(m, *kv, 0);
    SamplingParams p;
    p.temperature = 0;
    Sampler sampler(p, int32_t(m.n_vocab()));
    const std::vector<ChatMessage> msgs{{"user", "Count to one hundred."}};
    const auto prompt = tokenize_chat(m, msgs, true);
    std::atomic<bool> cancel{false};
    GenerateOptions opt;
    opt.max_tokens = 100;
    int seen = 0;
    const GenerateResult r = generate(
        seq, m.tokenizer(), prompt, sampler, opt,
        [&](const GeneratedToken&) {
            if (++seen == 3) cancel.store(true);
        },
        &cancel);
    EXPECT_EQ(r.stop, StopReason::Cancelled);
    EXPECT_EQ(r.tokens.size(), 3u);
}

}  // namespace
}  // namespace fluoro
