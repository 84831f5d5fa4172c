// The C++ chat renderers against jinja2 renderings of the real templates
// (tests/reference/fixtures/chat_templates.json, made by tests/reference/make_chat_fixtures.py):
// SmolLM2's template from its GGUF, a generic ChatML one, Gemma 3's and Llama 3's. For every
// conversation, with and without the generation prompt, the text must match exactly after the BOS
// rule of chat_render.h, and where the template raises, render_chat must throw.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat/chat_render.h"
#include "chat/template_detect.h"
#include "core/error.h"
#include "engine/chat/chat_fixture.h"
#include "gguf/gguf_file.h"
#include "test_models.h"

namespace fluoro {
namespace {

using json = nlohmann::json;

std::vector<ChatMessage> messages_of(const json& conversation) {
    std::vector<ChatMessage> out;
    for (const json& m : conversation["messages"])
        out.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    return out;
}

ChatTemplateKind expected_kind(const std::string& name) {
    if (name == "gemma3") return ChatTemplateKind::Gemma;
    if (name == "llama3") return ChatTemplateKind::Llama3;
    return ChatTemplateKind::ChatML;
}

TEST(ChatFixtureTest, RenderersMatchJinja2Exactly) {
    const json fx = test::load_chat_fixture();
    std::map<std::string, std::vector<ChatMessage>> conversations;
    for (const json& c : fx["conversations"]) conversations[c["name"]] = messages_of(c);
    std::map<std::string, json> templates;
    for (const json& t : fx["templates"]) templates[t["name"]] = t;

    size_t rendered = 0, rejected = 0;
    for (const json& c : fx["cases"]) {
        const json& t = templates.at(c["template"]);
        const std::string name = t["name"];
        const std::string jinja = t["template"];
        // As the app would: the kind from the file's template (Gemma 3's file has none, so its
        // architecture decides), options from the template text.
        const std::string in_file = t["template_in_gguf"].get<bool>() ? jinja : "";
        const ChatTemplateKind kind =
            detect_chat_template(in_file, t["arch"].get<std::string>()).kind;
        ASSERT_EQ(kind, expected_kind(name)) << name;
        const ChatRenderOptions opt = chat_options_from_template(in_file);
        const auto& msgs = conversations.at(c["conversation"]);
        const bool gen = c["add_generation_prompt"];
        const std::string where = name + " / " + c["conversation"].get<std::string>() +
                                  (gen ? " + generation prompt" : "");
        if (c.contains("error")) {
            EXPECT_THROW(render_chat(kind, msgs, gen, opt), Error) << where;
            ++rejected;
            continue;
        }
        const RenderedChat r = render_chat(kind, msgs, gen, opt);
        const std::string bos = t["bos_token"];
        EXPECT_FALSE(r.unknown_template) << where;
        EXPECT_EQ((r.template_bos ? bos : "") + r.text, c["text"].get<std::string>()) << where;
        // The BOS text never reaches `text`.
        if (r.template_bos) {
            EXPECT_FALSE(r.text.starts_with(bos)) << where;
        }
        ++rendered;
    }
    EXPECT_GE(rendered, 100u);
    EXPECT_GE(rejected, 8u);  // Gemma's empty and non-alternating conversations
}

TEST(ChatFixtureTest, FixtureRecordsVersionsAndSources) {
    const json fx = test::load_chat_fixture();
    EXPECT_FALSE(fx["jinja2_version"].get<std::string>().empty());
    ASSERT_EQ(fx["templates"].size(), 4u);
    for (const json& t : fx["templates"]) {
        EXPECT_FALSE(t["source"].get<std::string>().empty()) << t["name"];
        EXPECT_FALSE(t["template"].get<std::string>().empty()) << t["name"];
    }
}

// The fixture's SmolLM2 template must be the one in the real file, and the file's template is
// what gives SmolLM2 its default system prompt.
TEST(ChatFixtureTest, SmolLM2FileTemplateAndDefaultSystemPrompt) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    const auto file = gguf::GgufFile::open(path);
    const std::string jinja = file.get_string("tokenizer.chat_template").value_or("");
    const json fx = test::load_chat_fixture();
    for (const json& t : fx["templates"]) {
        if (t["name"] == "smollm2") {
            EXPECT_EQ(t["template"].get<std::string>(), jinja);
        }
    }
    EXPECT_EQ(detect_chat_template(jinja, "llama").kind, ChatTemplateKind::ChatML);
    EXPECT_EQ(chat_options_from_template(jinja).default_system_prompt,
              "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
    EXPECT_FALSE(file.get_bool("tokenizer.ggml.add_bos_token").value_or(true));
}

TEST(ChatFixtureTest, Gemma3FileHasNoTemplateAndIsRenderedAsGemma) {
    FLUORO_REQUIRE_MODEL(path, test::kGemma3File);
    const auto file = gguf::GgufFile::open(path);
    EXPECT_FALSE(file.get_string("tokenizer.chat_template").has_value());
    const std::string arch = file.get_string("general.architecture").value_or("");
    EXPECT_EQ(detect_chat_template("", arch).kind, ChatTemplateKind::Gemma);
    EXPECT_TRUE(file.get_bool("tokenizer.ggml.add_bos_token").value_or(false));
    EXPECT_FALSE(chat_options_from_template("").default_system_prompt.has_value());
}

}  // namespace
}  // namespace fluoro
