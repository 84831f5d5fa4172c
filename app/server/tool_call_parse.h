// Tool calls in a finished reply, for the server's `tool_calls`: the Hermes format that Qwen 2.5,
// Qwen 3, Hermes and many others' templates define - each call a JSON object
// {"name": ..., "arguments": {...}} between <tool_call> and </tool_call> (several allowed). The
// text outside the blocks is the reply's content. A block whose JSON does not parse, or lacks a
// string name, stays text: no call is ever invented from malformed output.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_render.h"

namespace fluoro::app {

inline constexpr std::string_view kToolCallOpen = "<tool_call>";
inline constexpr std::string_view kToolCallClose = "</tool_call>";

struct ParsedToolCalls {
    std::string content;          // the reply without the call blocks, trimmed
    std::vector<ToolCall> calls;  // ids "call_<n>_<random>"; arguments as compact JSON text
};

ParsedToolCalls parse_tool_calls(std::string_view reply);

}  // namespace fluoro::app
