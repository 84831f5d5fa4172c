// Tool calls out of a finished reply (Hermes format): the calls in order with their arguments as
// compact JSON, the text around them as content; anything malformed stays text.
#include "server/tool_call_parse.h"

#include <gtest/gtest.h>

namespace fluoro::app {
namespace {

TEST(ToolCallParse, CallsAreTakenOutAndTheRestIsContent) {
    const ParsedToolCalls p = parse_tool_calls(
        "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
        "\"Paris\", \"days\": 3}}\n</tool_call>\n<tool_call>{\"name\":\"now\"}</tool_call>\n");
    ASSERT_EQ(p.calls.size(), 2u);
    EXPECT_EQ(p.calls[0].name, "get_weather");
    EXPECT_EQ(p.calls[0].arguments, "{\"city\":\"Paris\",\"days\":3}");
    EXPECT_EQ(p.calls[1].name, "now");
    EXPECT_EQ(p.calls[1].arguments, "{}");
    EXPECT_NE(p.calls[0].id, p.calls[1].id);
    EXPECT_EQ(p.calls[0].id.rfind("call_", 0), 0u);
    EXPECT_EQ(p.content, "Let me check.");
}

TEST(ToolCallParse, ArgumentsGivenAsTextAndAnUnclosedLastCallCount) {
    const ParsedToolCalls p =
        parse_tool_calls("<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}");
    ASSERT_EQ(p.calls.size(), 1u);
    EXPECT_EQ(p.calls[0].arguments, "{\"x\": 1}");
    EXPECT_EQ(p.content, "");
}

TEST(ToolCallParse, MalformedBlocksStayText) {
    for (const char* reply : {
             "<tool_call>{\"name\": \"f\", \"arguments\": {</tool_call>",  // broken JSON
             "<tool_call>{\"arguments\": {}}</tool_call>",                 // no name
             "<tool_call>[1, 2]</tool_call>",                              // not an object
             "<tool_call>{\"name\": 7}</tool_call>",                       // name not a string
             "no call here",
         }) {
        const ParsedToolCalls p = parse_tool_calls(reply);
        EXPECT_TRUE(p.calls.empty()) << reply;
        EXPECT_EQ(p.content, reply);
    }
    // A good call next to a broken one: the good one counts, the broken one stays in the text.
    const ParsedToolCalls mixed = parse_tool_calls(
        "<tool_call>{oops}</tool_call> and <tool_call>{\"name\":\"g\"}</tool_call>");
    ASSERT_EQ(mixed.calls.size(), 1u);
    EXPECT_EQ(mixed.calls[0].name, "g");
    EXPECT_EQ(mixed.content, "<tool_call>{oops}</tool_call> and");
}

}  // namespace
}  // namespace fluoro::app
