// render_chat_jinja against the jinja2 renderings of tests/reference/fixtures/chat_templates.json:
// with chat_render.h's BOS rule undone ((bos_token if template_bos) + text), every case must equal
// jinja2's text, and where jinja2 raised, we must throw.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat/jinja_chat.h"
#include "core/error.h"
#include "engine/chat/chat_fixture.h"

namespace fluoro {
namespace {

using json = nlohmann::json;

TEST(JinjaChatTest, MatchesJinja2WithTheBosRule) {
    const json fx = test::load_chat_fixture();
    std::map<std::string, std::vector<ChatMessage>> conversations;
    for (const json& c : fx["conversations"]) {
        auto& msgs = conversations[c["name"]];
        for (const json& m : c["messages"]) msgs.push_back({m["role"], m["content"]});
    }
    std::map<std::string, json> templates;
    for (const json& t : fx["templates"]) templates[t["name"]] = t;

    std::size_t bos_seen = 0, cases = 0;
    for (const json& c : fx["cases"]) {
        const json& t = templates.at(c["template"]);
        const std::string bos = t["bos_token"], eos = t["eos_token"];
        const auto tmpl = jinja::Template::parse(t["template"].get<std::string>());
        const std::string where =
            t["name"].get<std::string>() + " / " + c["conversation"].get<std::string>();
        const JinjaChatInput in{bos, eos, c["add_generation_prompt"].get<bool>(), std::nullopt, {}};
        const auto& msgs = conversations.at(c["conversation"]);
        ++cases;
        if (c.contains("error")) {
            EXPECT_THROW(render_chat_jinja(tmpl, msgs, in), Error) << where;
            continue;
        }
        const RenderedChat r = render_chat_jinja(tmpl, msgs, in);
        EXPECT_EQ((r.template_bos ? bos : "") + r.text, c["text"].get<std::string>()) << where;
        bos_seen += r.template_bos;
    }
    EXPECT_EQ(cases, 128u);
    EXPECT_GT(bos_seen, 0u);  // Gemma and Llama 3 emit bos_token: the rule is exercised
}

}  // namespace
}  // namespace fluoro
