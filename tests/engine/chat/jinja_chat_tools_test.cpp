// ChatMessage's tool parts and the request's tools reach a model's template as transformers passes
// them: for the tool conversations of jinja_conversations.json (the ones jinja_compare.py checks
// our interpreter on against Python's jinja2), rendering the ChatMessage form through ChatFormat
// gives the same bytes as rendering the fixture's JSON context directly, with every real template
// in llama.cpp's collection. And the fallback families refuse tools with a clear error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "chat/chat_contents.h"
#include "chat/chat_format.h"
#include "core/error.h"
#include "jinja/jinja_test_support.h"
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

std::vector<ChatMessage> to_messages(const json& messages) {
    std::vector<ChatMessage> out;
    for (const json& m : messages) {
        ChatMessage c;
        c.role = m["role"];
        c.content_null = m["content"].is_null();
        if (!c.content_null) c.content = m["content"];
        for (const json& call : m.value("tool_calls", json::array()))
            c.tool_calls.push_back(
                {call["id"], call["function"]["name"], call["function"]["arguments"].dump()});
        c.tool_call_id = m.value("tool_call_id", "");
        c.name = m.value("name", "");
        c.reasoning_content = m.value("reasoning_content", "");
        out.push_back(std::move(c));
    }
    return out;
}

TEST(JinjaChatTools, SameRenderingAsTheFixtureContextOnRealTemplates) {
    const auto dir = test::models_dir() / "llama-cpp-python-0.3.36" / "templates";
    if (!std::filesystem::is_directory(dir)) {
        if (test::models_required()) FAIL() << dir << " missing (FLUORO_REQUIRE_MODELS=1)";
        GTEST_SKIP() << dir << " not found; run scripts/fetch-llama-cpp-source.sh";
    }
    const json all = json::parse(read_text(std::filesystem::path(FLUORO_TESTS_DIR) / "reference" /
                                           "jinja_conversations.json"));
    // Arguments given as a string ("tool_call_arguments_as_string") are not a ChatMessage form:
    // the server parses arguments into an object before rendering, as vLLM and llama.cpp do.
    const char* names[] = {"tool_calls", "two_tool_calls_and_results", "tools_without_calls"};
    int compared = 0, equal_renderings_with_tools = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().extension() != ".jinja") continue;
        const std::string source = read_text(entry.path());
        const ChatFormat format = ChatFormat::from_file(source, "", "<s>", "</s>");
        if (!format.uses_file_template()) continue;
        const auto tpl = jinja::Template::parse(source);
        for (const char* name : names) {
            SCOPED_TRACE(entry.path().stem().string() + " / " + name);
            const json& c = all.at(name);
            const bool gen = c.value("add_generation_prompt", false);
            json ctx = {{"messages", c["messages"]}, {"tools", c["tools"]},
                        {"documents", nullptr},      {"add_generation_prompt", gen},
                        {"bos_token", "<s>"},        {"eos_token", "</s>"}};
            std::string expected, expected_error;
            try {
                expected = tpl.render(jinja::test::from_json(ctx));
                if (expected.starts_with("<s>")) expected.erase(0, 3);
            } catch (const Error& e) {
                expected_error = e.what();
            }
            const auto messages = to_messages(c["messages"]);
            try {
                const RenderedChat r = format.render(messages, gen, {c["tools"].dump(), {}});
                EXPECT_EQ(expected_error, "");
                EXPECT_EQ(r.text, expected);
                if (r.text == expected && r.text.find("get_weather") != std::string::npos)
                    ++equal_renderings_with_tools;
            } catch (const Error& e) {
                EXPECT_NE(expected_error, "") << e.what();
            }
            ++compared;
        }
    }
    EXPECT_GE(compared, 150);
    // Most templates show the tools (or the calls) in the prompt; a broken pass-through would show
    // none.
    EXPECT_GE(equal_renderings_with_tools, 100);
    std::cout << "compared " << compared << ", with the tool visible "
              << equal_renderings_with_tools << "\n";
}

TEST(JinjaChatTools, FallbackFamiliesRefuseTools) {
    const ChatFormat format = ChatFormat::from_file("", "gemma3", "<bos>", "<eos>");
    ASSERT_FALSE(format.uses_file_template());
    std::vector<ChatMessage> messages = {{"user", "hi"}};
    EXPECT_NO_THROW(format.render(messages, true));
    try {
        format.render(messages, true, {R"([{"type": "function", "function": {"name": "f"}}])", {}});
        FAIL() << "tools accepted without a template";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("tools"), std::string::npos) << e.what();
    }
    messages.push_back({"tool", "42"});
    EXPECT_THROW(format.render(messages, true), Error);
}

TEST(JinjaChatTools, BadArgumentsJsonIsAClearError) {
    const ChatFormat format = ChatFormat::from_file(
        "{% for m in messages %}{{ m.tool_calls[0].function.arguments.city }}{% endfor %}", "", "",
        "");
    ChatMessage m{"assistant", ""};
    m.tool_calls.push_back({"c1", "get_weather", "{\"city\": \"Paris\"}"});
    EXPECT_EQ(format.render(std::vector{m}, false).text, "Paris");
    m.tool_calls[0].arguments = "{city: Paris}";
    try {
        format.render(std::vector{m}, false);
        FAIL() << "bad JSON accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("get_weather"), std::string::npos) << e.what();
    }
}

// Typed special-token text stays text with tools in play: the contents of a tool conversation
// are still located in Qwen 3's rendering (the tool definitions and calls are markup).
TEST(JinjaChatTools, ContentsAreLocatedInAToolConversation) {
    const auto path =
        test::models_dir() / "llama-cpp-python-0.3.36" / "templates" / "Qwen-Qwen3-0.6B.jinja";
    if (!std::filesystem::exists(path)) {
        if (test::models_required()) FAIL() << path << " missing (FLUORO_REQUIRE_MODELS=1)";
        GTEST_SKIP() << path << " not found";
    }
    const ChatFormat format = ChatFormat::from_file(read_text(path), "qwen3", "", "<|im_end|>");
    EXPECT_EQ(format.tool_call_syntax(), ToolCallSyntax::Hermes);
    const json all = json::parse(read_text(std::filesystem::path(FLUORO_TESTS_DIR) / "reference" /
                                           "jinja_conversations.json"));
    const json& c = all.at("tool_calls");
    const auto messages = to_messages(c["messages"]);
    const ChatWithContents r =
        render_locating_contents(format, messages, true, {c["tools"].dump(), false});
    EXPECT_NE(r.chat.text.find("\"name\": \"get_weather\""), std::string::npos) << r.chat.text;
    ASSERT_TRUE(r.contents.has_value()) << r.chat.text;
    std::string found, expected;
    for (const auto& span : *r.contents) found += r.chat.text.substr(span.offset, span.length);
    for (const auto& m : messages) expected += m.content;
    EXPECT_EQ(found, expected);
}

}  // namespace
}  // namespace fluoro
