#include "server/tool_call_parse.h"

#include <nlohmann/json.hpp>

#include <random>

namespace fluoro::app {

namespace {

std::string trimmed(std::string_view s) {
    const auto ws = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
    while (!s.empty() && ws(s.front())) s.remove_prefix(1);
    while (!s.empty() && ws(s.back())) s.remove_suffix(1);
    return std::string(s);
}

std::string call_id(size_t n) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    char buf[40];
    std::snprintf(buf, sizeof buf, "call_%zu_%08llx", n,
                  static_cast<unsigned long long>(rng() & 0xffffffffULL));
    return buf;
}

}  // namespace

ParsedToolCalls parse_tool_calls(std::string_view reply) {
    ParsedToolCalls out;
    std::string content;
    size_t pos = 0;
    while (pos < reply.size()) {
        const size_t open = reply.find(kToolCallOpen, pos);
        if (open == std::string_view::npos) break;
        const size_t body = open + kToolCallOpen.size();
        const size_t close = reply.find(kToolCallClose, body);
        // An unclosed last block (the reply stopped at max_tokens, or the template's close tag
        // was the stop token) still counts when its JSON is complete.
        const size_t end = close == std::string_view::npos ? reply.size() : close;
        bool ok = false;
        try {
            const nlohmann::json j = nlohmann::json::parse(reply.substr(body, end - body));
            const auto name = j.find("name");
            const auto args = j.find("arguments");
            if (j.is_object() && name != j.end() && name->is_string() &&
                !name->get<std::string>().empty() &&
                (args == j.end() || args->is_object() || args->is_string())) {
                std::string a = "{}";
                if (args != j.end())
                    a = args->is_string() ? args->get<std::string>() : args->dump();
                out.calls.push_back({call_id(out.calls.size()), name->get<std::string>(), a});
                ok = true;
            }
        } catch (const nlohmann::json::exception&) {
        }
        if (!ok) {  // not a call: keep the text as it was
            content.append(reply.substr(
                pos, end + (close == std::string_view::npos ? 0 : kToolCallClose.size()) - pos));
        } else {
            content.append(reply.substr(pos, open - pos));
        }
        pos = close == std::string_view::npos ? reply.size() : close + kToolCallClose.size();
    }
    if (pos < reply.size()) content.append(reply.substr(pos));
    out.content = out.calls.empty() ? std::string(reply) : trimmed(content);
    return out;
}

}  // namespace fluoro::app
