// Tools and tool calls through render_chat_jinja: for every real chat template llama.cpp
// collects (fetched from the pinned llama-cpp-python sdist) and every conversation of
// jinja_conversations.json that has tools or tool calls, rendering the engine's ChatMessages
// (tool_calls with arguments as JSON text, tool_call_id, name; tools as JSON text) must give the
// same text as rendering the conversation's JSON context directly - the context JinjaCompare
// renders with Python's jinja2 and requires identical (tests/tools/jinja_compare.py). So the
// messages an API request becomes reach the template exactly as transformers would pass them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "chat/jinja/jinja_json_parse.h"
#include "chat/jinja_chat.h"
#include "core/error.h"
#include "test_models.h"

namespace fluoro {
namespace {

using json = nlohmann::ordered_json;

std::string read_text(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct ToolConversation {
    std::string name;
    json context;  // messages, tools, add_generation_prompt (+ enable_thinking)
    std::vector<ChatMessage> messages;
    ChatExtras extras;
};

std::vector<ToolConversation> tool_conversations() {
    const json all = json::parse(read_text(std::filesystem::path(FLUORO_TESTS_DIR) / "reference" /
                                           "jinja_conversations.json"));
    std::vector<ToolConversation> out;
    for (const auto& [name, c] : all.items()) {
        if (name.starts_with("_")) continue;
        // Content parts (arrays) are joined by the server before the engine sees them, and
        // string arguments are parsed into objects (the engine always passes a dict, as
        // transformers users do): conversations written that way have no engine equivalent.
        bool representable = true;
        for (const json& m : c["messages"]) {
            representable = representable && (!m.contains("content") || m["content"].is_string() ||
                                              m["content"].is_null());
            if (m.contains("tool_calls"))
                for (const json& call : m["tool_calls"])
                    representable = representable && call["function"]["arguments"].is_object();
        }
        if (!representable) continue;
        bool has_tools = c.contains("tools");
        ToolConversation t{name, c, {}, {}};
        // A null content (an assistant turn that only calls tools) is "" for the engine, as the
        // server makes it; the JSON context gets the same, so the comparison is about the rest.
        for (json& m : t.context["messages"])
            if (!m.contains("content") || m["content"].is_null()) m["content"] = "";
        for (const json& m : t.context["messages"]) {
            ChatMessage msg{m["role"], m["content"]};
            if (m.contains("tool_calls")) {
                has_tools = true;
                for (const json& call : m["tool_calls"])
                    msg.tool_calls.push_back({call.value("id", std::string()),
                                              call["function"]["name"],
                                              call["function"]["arguments"].dump()});
            }
            msg.tool_call_id = m.value("tool_call_id", std::string());
            msg.name = m.value("name", std::string());
            if (m.contains("reasoning_content") && m["reasoning_content"].is_string())
                msg.reasoning_content = m["reasoning_content"];
            t.messages.push_back(std::move(msg));
        }
        if (!has_tools) continue;
        if (c.contains("tools")) t.extras.tools_json = c["tools"].dump();
        if (c.contains("enable_thinking")) t.extras.enable_thinking = c["enable_thinking"];
        out.push_back(std::move(t));
    }
    return out;
}

TEST(JinjaChatTools, MessagesReachTheTemplateAsTheJsonContextDoes) {
    const auto dir = test::models_dir() / "llama-cpp-python-0.3.36" / "templates";
    if (!std::filesystem::is_directory(dir)) {
        if (test::models_required()) FAIL() << dir << " missing (FLUORO_REQUIRE_MODELS=1)";
        GTEST_SKIP() << dir << " not found; run scripts/fetch-llama-cpp-source.sh";
    }
    const auto conversations = tool_conversations();
    ASSERT_GE(conversations.size(), 1u);
    size_t compared = 0, with_tools_text = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().extension() != ".jinja") continue;
        std::optional<jinja::Template> tmpl;
        try {
            tmpl = jinja::Template::parse(read_text(entry.path()));
        } catch (const Error&) {
            continue;  // not parsed: JinjaCompare reports those
        }
        for (const ToolConversation& c : conversations) {
            const std::string where = entry.path().filename().string() + " / " + c.name;
            json ctx = c.context;
            ctx["tools"] = c.context.contains("tools") ? c.context["tools"] : json(nullptr);
            ctx["documents"] = nullptr;
            ctx["add_generation_prompt"] = c.context.value("add_generation_prompt", false);
            ctx["bos_token"] = "<s>";
            ctx["eos_token"] = "</s>";
            std::string expected, error;
            try {
                expected = tmpl->render(jinja::parse_json(ctx.dump()));
            } catch (const Error& e) {
                error = e.what();
            }
            JinjaChatInput in{"<s>", "</s>", ctx["add_generation_prompt"].get<bool>(),
                              c.extras.enable_thinking, c.extras.tools_json};
            try {
                const RenderedChat r = render_chat_jinja(*tmpl, c.messages, in);
                EXPECT_TRUE(error.empty()) << where << ": the JSON context raised: " << error;
                EXPECT_EQ((r.template_bos ? "<s>" : "") + r.text, expected) << where;
                ++compared;
                if (!c.extras.tools_json.empty() &&
                    expected.find("get_weather") != std::string::npos)
                    ++with_tools_text;
            } catch (const Error& e) {
                EXPECT_FALSE(error.empty()) << where << ": only the messages raised: " << e.what();
            }
        }
    }
    EXPECT_GT(compared, 50u);
    EXPECT_GT(with_tools_text, 20u);  // most real templates do render the tool definitions
    std::cout << compared << " renderings compared, " << with_tools_text << " showing the tools\n";
}

}  // namespace
}  // namespace fluoro
