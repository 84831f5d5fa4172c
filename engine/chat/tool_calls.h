// Tool calls in a model's reply: which syntax a chat template teaches the model (read from the
// template text, by the markup it writes for assistant tool calls), how to take a finished reply
// apart into content and calls, and what a forced call must look like (for constrained decoding:
// a literal prefix, a JSON shape, a literal suffix).
//
// Syntaxes:
//   Hermes   (Hermes 2 Pro/3, Qwen 2.5, Qwen 3): <tool_call>\n{"name": N, "arguments":
//   {..}}\n</tool_call>,
//            several in a row allowed.
//   Llama3   (Llama 3.1/3.2/3.3): a reply that is one JSON object {"name": N, "parameters": {..}}
//            (optionally after <|python_tag|>); several separated by ';' are accepted.
//   Mistral  (Nemo, Small): [TOOL_CALLS][{"name": N, "arguments": {..}}, ...]
//   GptOss   (harmony): ...to=functions.N<|channel|>commentary json<|message|>{..}<|call|>, either
//            order of the to= and channel parts.
// Text that does not parse exactly stays content: nothing is invented from malformed output.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fluoro {

enum class ToolCallSyntax { None, Hermes, Llama3, Mistral, GptOss };

std::string_view tool_call_syntax_name(ToolCallSyntax syntax);

// From a chat template's text ("" when the file has none: None).
ToolCallSyntax detect_tool_call_syntax(std::string_view template_text);

struct ParsedToolCall {
    std::string name;
    std::string arguments;  // the arguments object as JSON text, as the model wrote it
};

struct ParsedReply {
    std::string content;  // the reply without the tool-call markup, whitespace-trimmed when calls
    std::vector<ParsedToolCall> tool_calls;
};

// Takes a finished reply apart. With no calls found, content is the reply unchanged.
ParsedReply parse_tool_calls(ToolCallSyntax syntax, std::string_view reply);

// Where a streamed reply starts a tool call: the index of the first opening marker in `text`
// (npos when none) — a caller streams content up to there and holds the rest. Llama3 has no
// marker: a reply whose first non-space character is '{' (or that starts with <|python_tag|>)
// is held from its start. A marker cut across deltas is the caller's concern (hold back a tail
// as long as tool_call_marker(syntax) minus one).
std::size_t tool_call_start(ToolCallSyntax syntax, std::string_view text);
std::string_view tool_call_marker(ToolCallSyntax syntax);

// What a forced call looks like, for constrained decoding: `prefix`, then JSON of `shape` whose
// call object is {"name": <the function>, <arguments_key>: <the parameters schema>}, then
// `suffix`. For GptOss the name is in the prefix (name_in_prefix): the JSON is the arguments
// object alone; the prefix holds "{name}" to substitute.
struct ForcedCallShape {
    std::string prefix;
    std::string arguments_key;  // "arguments" or "parameters"; empty when the JSON is the arguments
    bool array = false;         // the call objects are wrapped in a JSON array
    bool name_in_prefix = false;
    std::string suffix;
};

// nullopt-like: syntax None gives an empty shape with arguments_key "".
ForcedCallShape forced_call_shape(ToolCallSyntax syntax);

}  // namespace fluoro
