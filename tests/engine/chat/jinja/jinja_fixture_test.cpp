// The Jinja interpreter against the committed jinja2 renderings of SmolLM2's, a generic ChatML,
// Gemma 3's and Llama 3's templates (tests/reference/fixtures/chat_templates.json, made by
// tests/reference/make_chat_fixtures.py with jinja2 as transformers sets it up): every case must
// render byte-identically, and where jinja2 raised, we must raise. Unlike the hard-coded
// renderers (chat_fixture_test.cpp) no BOS rule applies: the template's text is compared whole.
#include <gtest/gtest.h>

#include <string>

#include "engine/chat/chat_fixture.h"
#include "engine/chat/jinja/jinja_test_support.h"

namespace fluoro::jinja {
namespace {

using json = nlohmann::json;

TEST(JinjaFixture, RendersLikeJinja2OnTheCommittedTemplates) {
    const json fx = fluoro::test::load_chat_fixture();
    std::map<std::string, json> conversations, templates;
    for (const json& c : fx["conversations"]) conversations[c["name"]] = c;
    for (const json& t : fx["templates"]) templates[t["name"]] = t;

    std::size_t rendered = 0, raised = 0;
    for (const json& c : fx["cases"]) {
        const json& t = templates.at(c["template"]);
        const std::string where =
            t["name"].get<std::string>() + " / " + c["conversation"].get<std::string>() +
            (c["add_generation_prompt"].get<bool>() ? " + generation prompt" : "");
        nlohmann::ordered_json ctx;
        ctx["messages"] = conversations.at(c["conversation"])["messages"];
        ctx["add_generation_prompt"] = c["add_generation_prompt"];
        ctx["bos_token"] = t["bos_token"];
        ctx["eos_token"] = t["eos_token"];
        const Template tmpl = Template::parse(t["template"].get<std::string>());
        const Value context = test::from_json(ctx);
        if (c.contains("error")) {
            EXPECT_THROW(tmpl.render(context), TemplateRuntimeError)
                << where << ": jinja2 raised " << c["error"];
            ++raised;
        } else {
            EXPECT_EQ(tmpl.render(context), c["text"].get<std::string>()) << where;
            ++rendered;
        }
    }
    // The fixture's size, so a truncated or emptied fixture cannot pass vacuously.
    EXPECT_EQ(rendered + raised, 128u);
    EXPECT_GT(raised, 0u);
}

}  // namespace
}  // namespace fluoro::jinja
