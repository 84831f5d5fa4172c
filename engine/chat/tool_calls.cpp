#include "chat/tool_calls.h"

#include <optional>

#include "chat/json_span.h"

namespace fluoro {
namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::size_t skip_space(std::string_view s, std::size_t i) {
    while (i < s.size() && is_space(s[i])) ++i;
    return i;
}

std::string trimmed(std::string_view s) {
    std::size_t b = skip_space(s, 0), e = s.size();
    while (e > b && is_space(s[e - 1])) --e;
    return std::string(s.substr(b, e - b));
}

// {"name": "<string>", <key>: {object}} (other members, e.g. "id", ignored); nullopt otherwise.
std::optional<ParsedToolCall> call_object(std::string_view text, std::string_view key) {
    const auto members = json_object_members(text);
    if (!members) return std::nullopt;
    std::optional<std::string> name;
    std::optional<std::string_view> args;
    for (const auto& [k, v] : *members) {
        if (k == "name") name = json_string_value(v);
        if (k == key && !v.empty() && v.front() == '{') args = v;
    }
    if (!name || name->empty() || !args) return std::nullopt;
    return ParsedToolCall{std::move(*name), std::string(*args)};
}

ParsedReply parse_hermes(std::string_view reply) {
    constexpr std::string_view open = "<tool_call>", close = "</tool_call>";
    ParsedReply out;
    std::string content;
    std::size_t i = 0;
    while (i < reply.size()) {
        const std::size_t at = reply.find(open, i);
        if (at == reply.npos) break;
        const std::size_t body = at + open.size();
        const auto end = json_value_end(reply, body);
        std::optional<ParsedToolCall> call;
        std::size_t after = reply.npos;
        if (end) {
            const std::size_t c = skip_space(reply, *end);
            if (reply.substr(c, close.size()) == close) {
                call = call_object(reply.substr(body, *end - body), "arguments");
                after = c + close.size();
            }
        }
        if (!call) {  // malformed: the marker stays content, keep looking after it
            content.append(reply.substr(i, body - i));
            i = body;
            continue;
        }
        content.append(reply.substr(i, at - i));
        out.tool_calls.push_back(std::move(*call));
        i = after;
    }
    if (out.tool_calls.empty()) return {std::string(reply), {}};
    content.append(reply.substr(std::min(i, reply.size())));
    out.content = trimmed(content);
    return out;
}

ParsedReply parse_llama3(std::string_view reply) {
    constexpr std::string_view tag = "<|python_tag|>";
    std::size_t i = skip_space(reply, 0);
    if (reply.substr(i, tag.size()) == tag) i = skip_space(reply, i + tag.size());
    ParsedReply out;
    while (i < reply.size()) {
        const auto end = json_value_end(reply, i);
        if (!end) return {std::string(reply), {}};
        auto call = call_object(reply.substr(i, *end - i), "parameters");
        if (!call) call = call_object(reply.substr(i, *end - i), "arguments");
        if (!call) return {std::string(reply), {}};
        out.tool_calls.push_back(std::move(*call));
        i = skip_space(reply, *end);
        if (i < reply.size() && reply[i] == ';') i = skip_space(reply, i + 1);
    }
    return out;
}

ParsedReply parse_mistral(std::string_view reply) {
    constexpr std::string_view marker = "[TOOL_CALLS]";
    const std::size_t at = reply.find(marker);
    if (at == reply.npos) return {std::string(reply), {}};
    const auto elements = json_array_elements(reply.substr(at + marker.size()));
    if (!elements || elements->empty()) return {std::string(reply), {}};
    ParsedReply out;
    for (std::string_view e : *elements) {
        auto call = call_object(e, "arguments");
        if (!call) return {std::string(reply), {}};
        out.tool_calls.push_back(std::move(*call));
    }
    out.content = trimmed(reply.substr(0, at));
    return out;
}

// The start of the harmony header holding `to_at`: the earliest <|start|> or <|channel|> after
// the previous message body, else `to_at` itself.
std::size_t harmony_header_start(std::string_view s, std::size_t from, std::size_t to_at) {
    const std::string_view before = s.substr(0, to_at);
    std::size_t floor = before.rfind("<|message|>");
    floor = (floor == before.npos || floor < from) ? from : floor;
    std::size_t start = to_at;
    for (std::string_view m : {"<|start|>", "<|channel|>"}) {
        const std::size_t p = before.find(m, floor);
        if (p != before.npos && p < start) start = p;
    }
    return start;
}

ParsedReply parse_gpt_oss(std::string_view reply) {
    constexpr std::string_view to = "to=functions.", message = "<|message|>", call_end = "<|call|>";
    ParsedReply out;
    std::string content;
    std::size_t i = 0;
    while (i < reply.size()) {
        const std::size_t at = reply.find(to, i);
        if (at == reply.npos) break;
        std::size_t n = at + to.size();
        while (n < reply.size() && !is_space(reply[n]) && reply[n] != '<') ++n;
        const std::string name(reply.substr(at + to.size(), n - at - to.size()));
        const std::size_t m = reply.find(message, n);
        std::optional<std::size_t> end;
        if (!name.empty() && m != reply.npos) end = json_value_end(reply, m + message.size());
        const std::size_t body = m == reply.npos ? reply.npos : m + message.size();
        if (!end || reply[skip_space(reply, body)] != '{') {
            content.append(reply.substr(i, n - i));
            i = n;
            continue;
        }
        const std::size_t header = harmony_header_start(reply, i, at);
        content.append(reply.substr(i, header - i));
        out.tool_calls.push_back({name, trimmed(reply.substr(body, *end - body))});
        i = skip_space(reply, *end);
        if (reply.substr(i, call_end.size()) == call_end) i += call_end.size();
    }
    if (out.tool_calls.empty()) return {std::string(reply), {}};
    content.append(reply.substr(std::min(i, reply.size())));
    out.content = trimmed(content);
    return out;
}

}  // namespace

std::string_view tool_call_syntax_name(ToolCallSyntax syntax) {
    switch (syntax) {
        case ToolCallSyntax::Hermes:
            return "hermes";
        case ToolCallSyntax::Llama3:
            return "llama3-json";
        case ToolCallSyntax::Mistral:
            return "mistral";
        case ToolCallSyntax::GptOss:
            return "gpt-oss";
        case ToolCallSyntax::None:
            break;
    }
    return "none";
}

ToolCallSyntax detect_tool_call_syntax(std::string_view t) {
    const auto has = [&](std::string_view m) { return t.find(m) != t.npos; };
    if (has("<tool_call>")) return ToolCallSyntax::Hermes;
    if (has("[TOOL_CALLS]")) return ToolCallSyntax::Mistral;
    if (has("<|call|>") && has("functions.")) return ToolCallSyntax::GptOss;
    if (has("<|start_header_id|>") && has("\"parameters\"")) return ToolCallSyntax::Llama3;
    return ToolCallSyntax::None;
}

ParsedReply parse_tool_calls(ToolCallSyntax syntax, std::string_view reply) {
    switch (syntax) {
        case ToolCallSyntax::Hermes:
            return parse_hermes(reply);
        case ToolCallSyntax::Llama3:
            return parse_llama3(reply);
        case ToolCallSyntax::Mistral:
            return parse_mistral(reply);
        case ToolCallSyntax::GptOss:
            return parse_gpt_oss(reply);
        case ToolCallSyntax::None:
            break;
    }
    return {std::string(reply), {}};
}

std::string_view tool_call_marker(ToolCallSyntax syntax) {
    switch (syntax) {
        case ToolCallSyntax::Hermes:
            return "<tool_call>";
        case ToolCallSyntax::Llama3:
            return "<|python_tag|>";
        case ToolCallSyntax::Mistral:
            return "[TOOL_CALLS]";
        case ToolCallSyntax::GptOss:
            return "to=functions.";
        case ToolCallSyntax::None:
            break;
    }
    return {};
}

std::size_t tool_call_start(ToolCallSyntax syntax, std::string_view text) {
    if (syntax == ToolCallSyntax::None) return std::string_view::npos;
    if (syntax == ToolCallSyntax::Llama3) {
        const std::size_t i = skip_space(text, 0);
        if (i < text.size() && text[i] == '{') return 0;
        return text.substr(i).starts_with(tool_call_marker(syntax)) ? 0 : std::string_view::npos;
    }
    const std::size_t at = text.find(tool_call_marker(syntax));
    if (at == text.npos || syntax != ToolCallSyntax::GptOss) return at;
    return harmony_header_start(text, 0, at);
}

ForcedCallShape forced_call_shape(ToolCallSyntax syntax) {
    switch (syntax) {
        case ToolCallSyntax::Hermes:
            return {"<tool_call>\n", "arguments", false, false, "\n</tool_call>"};
        case ToolCallSyntax::Llama3:
            return {"", "parameters", false, false, ""};
        case ToolCallSyntax::Mistral:
            return {"[TOOL_CALLS]", "arguments", true, false, ""};
        case ToolCallSyntax::GptOss:
            return {"<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>", "",
                    false, true, "<|call|>"};
        case ToolCallSyntax::None:
            break;
    }
    return {};
}

}  // namespace fluoro
