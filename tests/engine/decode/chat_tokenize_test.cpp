// tokenize_chat() on the real models against the reference way to tokenize a chat: render the
// conversation with the model's template (the jinja2 renderings in
// tests/reference/fixtures/chat_templates.json) and tokenize the whole text with special tokens
// parsed, as llama.cpp and transformers do. For contents without special-token text the ids must
// be identical; that catches a content that never reaches the prompt (Gemma 3 once lost every
// message: its renderer's strip() removed the content marker) as well as boundary effects of
// tokenizing markup and contents separately.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "decode/chat_tokenize.h"
#include "engine/chat/chat_fixture.h"
#include "engine/model/model_fixture.h"

namespace fluoro {
namespace {

using json = nlohmann::json;

std::string ids_text(const std::vector<int32_t>& ids) {
    std::string s;
    for (int32_t id : ids) s += std::to_string(id) + " ";
    return s;
}

// Every case of `template_name` in the fixture, tokenized both ways on the model in `file`.
void expect_reference_tokenization(const char* file, const std::string& template_name) {
    auto* lm = test::shared_model(test::models_dir() / file);
    ASSERT_NE(lm, nullptr);
    const Model& model = *lm->model;
    const tok::Tokenizer& tk = model.tokenizer();
    const json fx = test::load_chat_fixture();
    std::map<std::string, std::vector<ChatMessage>> conversations;
    for (const json& c : fx["conversations"]) {
        std::vector<ChatMessage> msgs;
        for (const json& m : c["messages"])
            msgs.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
        conversations[c["name"]] = std::move(msgs);
    }
    size_t compared = 0;
    for (const json& c : fx["cases"]) {
        if (c["template"] != template_name || c.contains("error")) continue;
        const std::string conv = c["conversation"];
        // Special-token text typed into a message stays text for us, by design (see
        // ChatTokenize.UserTypedSpecialTokensStayText); the whole-text reference parses it.
        if (conv == "template_text_in_content") continue;
        const bool gen = c["add_generation_prompt"];
        const std::string where =
            template_name + " / " + conv + (gen ? " + generation prompt" : "");
        std::vector<int32_t> expected = tk.encode(c["text"].get<std::string>(), false, true);
        const int32_t bos = tk.vocab().bos();
        if (tk.vocab().add_bos() && (expected.empty() || expected[0] != bos))
            expected.insert(expected.begin(), bos);
        const std::vector<int32_t> got = tokenize_chat(model, conversations.at(conv), gen);
        EXPECT_EQ(got, expected) << where << "\n  got:      " << ids_text(got)
                                 << "\n  expected: " << ids_text(expected);
        ++compared;
    }
    EXPECT_GE(compared, 20u) << template_name;
}

TEST(ChatTokenize, SmolLM2MatchesWholeTextTokenization) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    expect_reference_tokenization(test::kSmolLM2File, "smollm2");
}

TEST(ChatTokenize, Gemma3MatchesWholeTextTokenization) {
    FLUORO_REQUIRE_MODEL(path, test::kGemma3File);
    expect_reference_tokenization(test::kGemma3File, "gemma3");
}

// The message itself is in the prompt, for every template kind the real models use.
TEST(ChatTokenize, EveryMessageReachesThePrompt) {
    for (const char* file : {test::kSmolLM2File, test::kGemma3File}) {
        FLUORO_REQUIRE_MODEL(path, file);
        auto* lm = test::shared_model(path);
        ASSERT_NE(lm, nullptr);
        const Model& model = *lm->model;
        const std::vector<ChatMessage> msgs{
            {"system", "You are a careful assistant."},
            {"user", "  Please summarise the plot of Hamlet in two sentences.  "}};
        const auto ids = tokenize_chat(model, msgs, true);
        const std::string text = model.tokenizer().decode(ids, true);
        EXPECT_NE(text.find("You are a careful assistant."), std::string::npos) << file << text;
        EXPECT_NE(text.find("Please summarise the plot of Hamlet in two sentences."),
                  std::string::npos)
            << file << ": " << text;
    }
}

TEST(ChatTokenize, UserTypedSpecialTokensStayText) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    const Model& m = *test::shared_model(path)->model;
    const std::vector<ChatMessage> msgs{{"user", "say <|im_end|> please"}};
    const auto ids = tokenize_chat(m, msgs, true);
    const int32_t im_end = m.tokenizer().vocab().eos();  // <|im_end|> = 2 in SmolLM2
    // The template's own <|im_end|> closes the system and user turns: exactly two, none from the
    // user's text.
    EXPECT_EQ(std::count(ids.begin(), ids.end(), im_end), 2);
    EXPECT_NE(m.tokenizer().decode(ids, true).find("say <|im_end|> please"), std::string::npos);
}

}  // namespace
}  // namespace fluoro
