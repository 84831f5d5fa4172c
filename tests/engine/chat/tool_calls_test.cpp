// Tool-call syntax detection and reply parsing: hand-written replies (valid, several calls,
// malformed), and a round trip through llama.cpp's collection of real templates — each template
// renders an assistant turn with a tool call in its own markup, and parse_tool_calls() must read
// the same call back from that text.
#include "chat/tool_calls.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "chat/jinja/jinja_template.h"
#include "jinja/jinja_test_support.h"
#include "test_models.h"

namespace fluoro {
namespace {

using json = nlohmann::ordered_json;

TEST(ToolCalls, HermesOneCall) {
    const auto r = parse_tool_calls(ToolCallSyntax::Hermes,
                                    "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", "
                                    "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>");
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.tool_calls[0].name, "get_weather");
    EXPECT_EQ(r.tool_calls[0].arguments, "{\"city\": \"Paris\"}");
    EXPECT_EQ(r.content, "Let me check.");
}

TEST(ToolCalls, HermesSeveralCallsAndNoContent) {
    const auto r =
        parse_tool_calls(ToolCallSyntax::Hermes,
                         "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
                         "<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\": [1, "
                         "\"</tool_call>\"]}}\n</tool_call>");
    ASSERT_EQ(r.tool_calls.size(), 2u);
    EXPECT_EQ(r.tool_calls[0].name, "a");
    EXPECT_EQ(r.tool_calls[1].name, "b");
    EXPECT_EQ(r.tool_calls[1].arguments, "{\"x\": [1, \"</tool_call>\"]}");
    EXPECT_EQ(r.content, "");
}

TEST(ToolCalls, MalformedCallsStayContent) {
    for (std::string_view reply : {
             "<tool_call>\n{\"name\": \"a\", \"arguments\": {}\n</tool_call>",      // unbalanced
             "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}",                   // no close tag
             "<tool_call>\n{\"arguments\": {}}\n</tool_call>",                      // no name
             "<tool_call>\n{\"name\": \"a\", \"arguments\": \"x\"}\n</tool_call>",  // not an object
             "<tool_call>\n{'name': 'a', 'arguments': {}}\n</tool_call>",           // not JSON
             "just text <tool_call>",
         }) {
        const auto r = parse_tool_calls(ToolCallSyntax::Hermes, reply);
        EXPECT_TRUE(r.tool_calls.empty()) << reply;
        EXPECT_EQ(r.content, reply);
    }
}

TEST(ToolCalls, HermesKeepsAMalformedBlockAsContentBesideAGoodOne) {
    const auto r = parse_tool_calls(ToolCallSyntax::Hermes,
                                    "<tool_call>\nnope\n</tool_call>\n<tool_call>\n{\"name\": "
                                    "\"a\", \"arguments\": {}}\n</tool_call>");
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.content, "<tool_call>\nnope\n</tool_call>");
}

TEST(ToolCalls, Llama3Json) {
    auto r =
        parse_tool_calls(ToolCallSyntax::Llama3, " {\"name\": \"f\", \"parameters\": {\"q\": 1}}");
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.tool_calls[0].arguments, "{\"q\": 1}");
    r = parse_tool_calls(ToolCallSyntax::Llama3,
                         "<|python_tag|>{\"name\": \"f\", \"parameters\": {}}; {\"name\": \"g\", "
                         "\"parameters\": {}}");
    ASSERT_EQ(r.tool_calls.size(), 2u);
    EXPECT_EQ(r.tool_calls[1].name, "g");
    // Prose, or JSON that is not a call, is content.
    for (std::string_view reply : {"The answer is {\"name\": \"f\"}", "{\"a\": 1}",
                                   "{\"name\": \"f\", \"parameters\": {}} and more"}) {
        r = parse_tool_calls(ToolCallSyntax::Llama3, reply);
        EXPECT_TRUE(r.tool_calls.empty()) << reply;
        EXPECT_EQ(r.content, reply);
    }
}

TEST(ToolCalls, Mistral) {
    auto r = parse_tool_calls(ToolCallSyntax::Mistral,
                              "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": 1}, \"id\": "
                              "\"abcdefghi\"}, {\"name\": \"g\", \"arguments\": {}}]");
    ASSERT_EQ(r.tool_calls.size(), 2u);
    EXPECT_EQ(r.tool_calls[0].arguments, "{\"a\": 1}");
    r = parse_tool_calls(ToolCallSyntax::Mistral, "[TOOL_CALLS][{\"name\": \"f\"}]");
    EXPECT_TRUE(r.tool_calls.empty());
    EXPECT_EQ(r.content, "[TOOL_CALLS][{\"name\": \"f\"}]");
}

TEST(ToolCalls, GptOssBothHeaderOrders) {
    auto r = parse_tool_calls(ToolCallSyntax::GptOss,
                              "<|channel|>commentary to=functions.get_weather <|constrain|>json"
                              "<|message|>{\"city\": \"Paris\"}<|call|>");
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.tool_calls[0].name, "get_weather");
    EXPECT_EQ(r.tool_calls[0].arguments, "{\"city\": \"Paris\"}");
    EXPECT_EQ(r.content, "");
    r = parse_tool_calls(ToolCallSyntax::GptOss,
                         "Checking.<|end|><|start|>assistant to=functions.f<|channel|>commentary "
                         "json<|message|>{}<|call|>");
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.content, "Checking.<|end|>");
    r = parse_tool_calls(ToolCallSyntax::GptOss, "to=functions.f<|message|>not json");
    EXPECT_TRUE(r.tool_calls.empty());
}

TEST(ToolCalls, NoneSyntaxParsesNothing) {
    const std::string_view reply =
        "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>";
    EXPECT_TRUE(parse_tool_calls(ToolCallSyntax::None, reply).tool_calls.empty());
}

TEST(ToolCalls, StreamStartMarkers) {
    EXPECT_EQ(tool_call_start(ToolCallSyntax::Hermes, "ok <tool_call>\n{"), 3u);
    EXPECT_EQ(tool_call_start(ToolCallSyntax::Hermes, "ok"), std::string_view::npos);
    EXPECT_EQ(tool_call_start(ToolCallSyntax::Llama3, "  {\"na"), 0u);
    EXPECT_EQ(tool_call_start(ToolCallSyntax::Llama3, "Hello {"), std::string_view::npos);
    EXPECT_EQ(tool_call_start(ToolCallSyntax::GptOss, "x<|start|>assistant to=functions.f"), 1u);
}

TEST(ToolCalls, ForcedShapes) {
    const auto h = forced_call_shape(ToolCallSyntax::Hermes);
    EXPECT_EQ(h.prefix, "<tool_call>\n");
    EXPECT_EQ(h.arguments_key, "arguments");
    EXPECT_EQ(h.suffix, "\n</tool_call>");
    EXPECT_EQ(forced_call_shape(ToolCallSyntax::Llama3).arguments_key, "parameters");
    EXPECT_TRUE(forced_call_shape(ToolCallSyntax::Mistral).array);
    EXPECT_TRUE(forced_call_shape(ToolCallSyntax::GptOss).name_in_prefix);
    // A forced Hermes call, filled in, parses back.
    const std::string text = h.prefix + "{\"name\": \"f\", \"arguments\": {}}" + h.suffix;
    EXPECT_EQ(parse_tool_calls(ToolCallSyntax::Hermes, text).tool_calls.size(), 1u);
}

std::string read_text(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Render with the real template: the assistant turn's text is the rendering of [user, assistant
// with a call] past the rendering of [user] + generation prompt.
std::string rendered_assistant_turn(const std::string& source) {
    const auto tpl = jinja::Template::parse(source);
    const json tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
        "description": "Weather for a city", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])");
    json user = {{"role", "user"}, {"content", "Weather in Paris?"}};
    json call = {
        {"role", "assistant"},
        {"content", ""},
        {"tool_calls",
         json::array(
             {{{"id", "abcdefghi"},
               {"type", "function"},
               {"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}}}}}}})}};
    auto ctx = [&](json messages, bool gen) {
        return jinja::test::from_json(json{{"messages", messages},
                                           {"tools", tools},
                                           {"add_generation_prompt", gen},
                                           {"bos_token", "<s>"},
                                           {"eos_token", "</s>"}});
    };
    const std::string prompt = tpl.render(ctx(json::array({user}), true));
    const std::string full = tpl.render(ctx(json::array({user, call}), false));
    std::string turn = full.starts_with(prompt) ? full.substr(prompt.size())
                                                : full.substr(full.find("Weather in Paris?"));
    // Generation stops at the end-of-turn token, which the reply's text does not include.
    for (std::string_view end : {"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "</s>"}) {
        while (!turn.empty() && (turn.back() == '\n' || turn.back() == ' ')) turn.pop_back();
        if (turn.ends_with(end)) turn.resize(turn.size() - end.size());
    }
    return turn;
}

TEST(ToolCallsRealTemplates, DetectAndReadBackTheTemplatesOwnMarkup) {
    const auto dir = test::models_dir() / "llama-cpp-python-0.3.36" / "templates";
    if (!std::filesystem::is_directory(dir)) {
        if (test::models_required()) FAIL() << dir << " missing (FLUORO_REQUIRE_MODELS=1)";
        GTEST_SKIP() << dir << " not found; run scripts/fetch-llama-cpp-source.sh";
    }
    const std::pair<const char*, ToolCallSyntax> cases[] = {
        {"Qwen-Qwen3-0.6B", ToolCallSyntax::Hermes},
        {"Qwen-Qwen2.5-7B-Instruct", ToolCallSyntax::Hermes},
        {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", ToolCallSyntax::Hermes},
        {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", ToolCallSyntax::Hermes},
        {"meta-llama-Llama-3.1-8B-Instruct", ToolCallSyntax::Llama3},
        {"meta-llama-Llama-3.2-3B-Instruct", ToolCallSyntax::Llama3},
        {"mistralai-Mistral-Nemo-Instruct-2407", ToolCallSyntax::Mistral},
        {"openai-gpt-oss-120b", ToolCallSyntax::GptOss},
        {"google-gemma-2-2b-it", ToolCallSyntax::None},
    };
    for (const auto& [name, syntax] : cases) {
        SCOPED_TRACE(name);
        const std::string source = read_text(dir / (std::string(name) + ".jinja"));
        ASSERT_FALSE(source.empty());
        EXPECT_EQ(detect_tool_call_syntax(source), syntax);
        if (syntax == ToolCallSyntax::None) continue;
        const std::string turn = rendered_assistant_turn(source);
        const auto r = parse_tool_calls(syntax, turn);
        ASSERT_EQ(r.tool_calls.size(), 1u) << turn;
        EXPECT_EQ(r.tool_calls[0].name, "get_weather");
        EXPECT_EQ(json::parse(r.tool_calls[0].arguments), json({{"city", "Paris"}})) << turn;
        // The call's markup is gone from the content (Qwen 3 leaves an empty <think> block there,
        // which the engine's reasoning split removes).
        EXPECT_EQ(r.content.find("get_weather"), std::string::npos) << r.content;
    }
}

}  // namespace
}  // namespace fluoro
