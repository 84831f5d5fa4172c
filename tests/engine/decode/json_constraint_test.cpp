// Constrained decoding to one JSON object (decode/json_constraint.h) on a hand-made vocabulary:
// the mask allows exactly the tokens whose bytes keep the text a JSON-object prefix (multi-byte
// tokens that cross a structural boundary included, empty/control tokens never), accept()
// advances, done() comes with the closing brace; and the decode loop (generate.h) under the
// constraint on SmolLM2 — greedy and sampled — gives text that parses as an object.
#include "decode/json_constraint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "decode/chat_tokenize.h"
#include "decode/generate.h"
#include "model/model.h"
#include "test_models.h"

namespace fluoro {
namespace {

std::vector<int> allowed(const JsonConstraint& c, size_t n) {
    std::vector<float> logits(n, 0.0f);
    c.mask(logits);
    std::vector<int> out;
    for (size_t i = 0; i < n; ++i)
        if (!std::isinf(logits[i])) out.push_back(int(i));
    return out;
}

TEST(JsonConstraint, MasksEveryTokenThatWouldBreakTheObject) {
    // 0 "{", 1 "}", 2 "\"", 3 "a", 4 "\":", 5 " 1}", 6 "x", 7 "" (a control token), 8 "{\"",
    // 9 "}}".
    const auto vocab = constraint_vocab({"{", "}", "\"", "a", "\":", " 1}", "x", "", "{\"", "}}"});
    const std::vector<std::string>* bytes = &vocab->bytes;
    JsonConstraint c(vocab);
    EXPECT_EQ(allowed(c, bytes->size()), (std::vector<int>{0, 8}));  // an object opens
    c.accept(8);                                                     // {"
    EXPECT_EQ(allowed(c, bytes->size()), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 8, 9}));  // key
    c.accept(3);                                                                          // {"a
    c.accept(4);                                                                          // {"a":
    EXPECT_EQ(allowed(c, bytes->size()), (std::vector<int>{0, 2, 4, 5, 8}));              // a value
    EXPECT_FALSE(c.done());
    c.accept(5);  // {"a": 1}
    EXPECT_TRUE(c.done());
    EXPECT_THROW(c.accept(1), Error);  // a token the mask refused
    // Nothing can follow a complete object but whitespace: no token here.
    std::vector<float> logits(bytes->size(), 0.0f);
    EXPECT_THROW(c.mask(logits), Error);
}

// The fast mask (first-byte screen, plain string text allowed without a feed) equals trying every
// token's whole bytes, on SmolLM2's 49152 tokens, in every state a sample object passes through
// (keys, escapes, numbers, literals, nesting, whitespace).
TEST(JsonConstraint, TheFastMaskEqualsTryingEveryToken) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    cpu::CpuBackend backend(1);
    const auto model = Model::load(path, backend, {});
    const auto vocab = constraint_vocab(model->tokenizer());
    const std::string doc =
        "{\"name\": \"Fe \\\"li\\u00e9\", \"age\":-2.5e+1,\n \"tags\": [true, null, 0],"
        "\"x\":{}}";
    size_t checked = 0;
    for (size_t i = 0; i <= doc.size(); ++i) {
        JsonPrefix state;
        ASSERT_TRUE(state.feed(std::string_view(doc).substr(0, i)));
        const JsonConstraint at(vocab, state);
        std::vector<float> fast(vocab->bytes.size(), 0.0f);
        at.mask(fast);
        for (size_t id = 0; id < vocab->bytes.size(); ++id) {
            JsonPrefix next = state;
            const bool want = !vocab->bytes[id].empty() && next.feed(vocab->bytes[id]);
            ASSERT_EQ(!std::isinf(fast[id]), want) << "after " << doc.substr(0, i) << ": token "
                                                   << id << " '" << vocab->bytes[id] << "'";
            ++checked;
        }
    }
    EXPECT_EQ(checked, (doc.size() + 1) * vocab->bytes.size());
}

// SmolLM2 asked for a JSON object, decoded under the constraint: greedy and at temperature 1
// (three seeds), the reply is one object that nlohmann's parser accepts, and the run ends as it
// closes (finish "eog", before the token limit).
TEST(JsonConstraint, SmolLM2RepliesWithAnObjectGreedyAndSampled) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    cpu::CpuBackend backend(2);
    const auto model = Model::load(path, backend, {});
    const std::vector<ChatMessage> chat = {
        {"user", "Describe a cat as a JSON object with the keys name, age and color."}};
    const std::vector<int32_t> prompt = tokenize_chat(*model, chat, true, {});
    const auto vocab = constraint_vocab(model->tokenizer());
    for (const float temperature : {0.0f, 1.0f, 1.0f, 1.0f}) {
        static uint64_t seed = 0;
        SamplingParams sp;
        sp.temperature = temperature;
        sp.seed = ++seed;
        Sampler sampler(sp, model->n_vocab());
        auto kv = model->create_kv(1024, 1, KvType::F16);
        Sequence seq(*model, *kv, 0);
        JsonConstraint json(vocab);
        GenerateOptions opt;
        opt.max_tokens = 400;
        opt.constraint = &json;
        const GenerateResult r = generate(seq, model->tokenizer(), prompt, sampler, opt);
        SCOPED_TRACE("temperature " + std::to_string(temperature) + ": " + r.text);
        EXPECT_EQ(r.stop, StopReason::EndOfGeneration);
        const nlohmann::json j = nlohmann::json::parse(r.text);  // throws if not JSON
        EXPECT_TRUE(j.is_object());
        std::printf("[json] t=%.1f seed %llu: %zu tokens: %s\n", double(temperature),
                    static_cast<unsigned long long>(seed), r.tokens.size(), r.text.c_str());
    }
}

}  // namespace
}  // namespace fluoro
