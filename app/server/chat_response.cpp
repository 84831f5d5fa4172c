#include "server/chat_response.h"

#include <random>

#include "chat/tool_calls.h"

#include <chrono>
#include <cstdio>
#include <random>

namespace fluoro::app {

using nlohmann::json;

CompletionIds new_completion_ids(std::string model) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    char buf[32];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
    CompletionIds ids;
    ids.id = "chatcmpl-";
    ids.id += buf;
    ids.created = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    ids.model = std::move(model);
    return ids;
}

std::string finish_reason(const RunFinished& f) {
    if (f.stop == "max_tokens" || f.stop == "context_full" || f.stop == "timeout") return "length";
    return "stop";
}

json usage_json(const RunFinished& f) {
    return json{{"prompt_tokens", f.prompt_tokens},
                {"completion_tokens", f.n_tokens},
                {"total_tokens", f.prompt_tokens + f.n_tokens},
                {"prompt_tokens_details", {{"cached_tokens", f.cached_tokens}}}};
}

void add_completion_tokens(json& usage, int64_t tokens) {
    usage["completion_tokens"] = usage["completion_tokens"].get<int64_t>() + tokens;
    usage["total_tokens"] = usage["total_tokens"].get<int64_t>() + tokens;
}

json timings_json(const RunFinished& f, const PrefixCacheEvent* cache) {
    json t{{"prompt_tokens", f.prompt_tokens},
           {"cached_tokens", f.cached_tokens},
           {"prompt_ms", f.prefill_ms},
           {"prompt_per_second",
            f.prefill_ms > 0 ? 1000.0 * double(f.computed_tokens) / f.prefill_ms : 0.0},
           {"ttft_ms", f.ttft_ms},
           {"predicted_tokens", f.n_tokens},
           {"predicted_ms", f.decode_ms},
           {"predicted_per_second",
            f.decode_ms > 0 ? 1000.0 * double(f.decode_steps) / f.decode_ms : 0.0},
           {"drafted_tokens", f.drafted_tokens},
           {"accepted_tokens", f.accepted_tokens}};
    if (cache != nullptr)
        t["cache"] = json{{"source", cache->source},
                          {"matched_tokens", cache->cached_tokens},
                          {"diverge_at", cache->diverge_at},
                          {"diverge_prompt_token", cache->diverge_prompt_token},
                          {"diverge_cached_token", cache->diverge_cached_token},
                          {"evicted_entries", cache->evicted_entries},
                          {"evicted_tokens", cache->evicted_tokens},
                          {"entries", cache->cache_entries},
                          {"entry_tokens", cache->cache_tokens}};
    return t;
}

namespace {
json token_logprob(const std::string& text, float logprob) {
    json bytes = json::array();
    for (const unsigned char c : text) bytes.push_back(int(c));
    return json{{"token", text}, {"logprob", logprob}, {"bytes", std::move(bytes)}};
}
json logprobs_field(const json* entries) {
    return entries ? json{{"content", *entries}} : json(nullptr);
}
}  // namespace

json logprob_entry(const TokenEvent& t, int top) {
    json e = token_logprob(t.token_text, t.logprob);
    json alts = json::array();
    for (size_t i = 0; i < t.top.size() && i < t.top_text.size() && int(i) < top; ++i)
        alts.push_back(token_logprob(t.top_text[i], t.top[i].logprob));
    e["top_logprobs"] = std::move(alts);
    return e;
}

namespace {
// "call_<n>_<random>": unique within the reply and unlikely to repeat across replies.
std::string call_id(size_t n) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    char buf[40];
    std::snprintf(buf, sizeof buf, "call_%zu_%08llx", n,
                  static_cast<unsigned long long>(rng() & 0xffffffffULL));
    return buf;
}
}  // namespace

ReplyParts reply_parts(const RunFinished& f, ToolCallSyntax syntax) {
    ReplyParts p;
    const bool split = f.reasoning_tokens > 0 || !f.reasoning_text.empty();
    p.reasoning = f.reasoning_text;
    p.content = split ? f.answer_text : f.text;
    if (syntax != ToolCallSyntax::None) {
        ParsedReply parsed = parse_tool_calls(syntax, p.content);
        if (!parsed.tool_calls.empty()) {
            p.content = std::move(parsed.content);
            for (ParsedToolCall& c : parsed.tool_calls)
                p.tool_calls.push_back(
                    {call_id(p.tool_calls.size()), std::move(c.name), std::move(c.arguments)});
        }
    }
    return p;
}

json tool_calls_json(const std::vector<ChatToolCall>& calls, bool with_index) {
    json out = json::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        json c{{"id", calls[i].id},
               {"type", "function"},
               {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
        if (with_index) c["index"] = i;
        out.push_back(std::move(c));
    }
    return out;
}

json completion_json(const CompletionIds& ids, const RunFinished& f, const PrefixCacheEvent* cache,
                     const json* logprobs, const ReplyParts* parts) {
    json message{{"role", "assistant"}, {"content", parts ? parts->content : f.text}};
    std::string finish = finish_reason(f);
    if (parts && !parts->reasoning.empty()) message["reasoning_content"] = parts->reasoning;
    if (parts && !parts->tool_calls.empty()) {
        message["tool_calls"] = tool_calls_json(parts->tool_calls, false);
        if (parts->content.empty()) message["content"] = nullptr;
        finish = "tool_calls";
    }
    json choice{{"index", 0},
                {"message", std::move(message)},
                {"logprobs", logprobs_field(logprobs)},
                {"finish_reason", finish}};
    return json{{"id", ids.id},
                {"object", "chat.completion"},
                {"created", ids.created},
                {"model", ids.model},
                {"choices", json::array({choice})},
                {"usage", usage_json(f)},
                {"timings", timings_json(f, cache)}};
}

json chunk_json(const CompletionIds& ids, std::string_view content, bool first,
                std::string_view finish, const json* logprobs) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (finish.empty()) delta["content"] = std::string(content);
    json choice{{"index", 0}, {"delta", delta}, {"logprobs", logprobs_field(logprobs)}};
    choice["finish_reason"] = finish.empty() ? json(nullptr) : json(std::string(finish));
    return json{{"id", ids.id},
                {"object", "chat.completion.chunk"},
                {"created", ids.created},
                {"model", ids.model},
                {"choices", json::array({choice})}};
}

json usage_chunk_json(const CompletionIds& ids, const RunFinished& f,
                      const PrefixCacheEvent* cache) {
    return json{{"id", ids.id},
                {"object", "chat.completion.chunk"},
                {"created", ids.created},
                {"model", ids.model},
                {"choices", json::array()},
                {"usage", usage_json(f)},
                {"timings", timings_json(f, cache)}};
}

json error_json(std::string_view message, std::string_view type, std::string_view param,
                std::string_view code) {
    const auto or_null = [](std::string_view s) {
        return s.empty() ? json(nullptr) : json(std::string(s));
    };
    return json{{"error",
                 {{"message", std::string(message)},
                  {"type", std::string(type)},
                  {"param", or_null(param)},
                  {"code", or_null(code)}}}};
}

ContextOverflow context_overflow(const RunFinished& f) {
    if (f.stop != "error" || f.overflow_prompt_tokens <= 0) return {};
    return {f.overflow_prompt_tokens, f.overflow_context_tokens};
}

json context_overflow_json(const ContextOverflow& o) {
    std::string msg = "This model's maximum context length is ";
    msg += std::to_string(o.context_tokens);
    msg += " tokens, but your messages resulted in ";
    msg += std::to_string(o.prompt_tokens);
    msg += " tokens. Shorten the messages (or start the server with a larger --ctx).";
    json j = error_json(msg, "invalid_request_error", "messages", "context_length_exceeded");
    j["error"]["prompt_tokens"] = o.prompt_tokens;
    j["error"]["context_tokens"] = o.context_tokens;
    return j;
}

std::string sse_event(const json& j) {
    std::string s = "data: ";
    // Invalid UTF-8 in a piece (never expected: pieces are whole sequences) is replaced.
    s += j.dump(-1, ' ', false, json::error_handler_t::replace);
    s += "\n\n";
    return s;
}

nlohmann::json to_text_completion(nlohmann::json j) {
    const auto object = j.find("object");
    if (object == j.end() || !object->is_string()) return j;
    const std::string o = object->get<std::string>();
    if (o != "chat.completion" && o != "chat.completion.chunk") return j;
    j["object"] = "text_completion";
    if (auto id = j.find("id"); id != j.end() && id->is_string()) {
        const std::string s = id->get<std::string>();
        if (s.rfind("chatcmpl-", 0) == 0) *id = "cmpl-" + s.substr(9);
    }
    if (auto choices = j.find("choices"); choices != j.end() && choices->is_array())
        for (auto& c : *choices) {
            const char* part = c.contains("message") ? "message" : "delta";
            std::string text;
            if (auto m = c.find(part); m != c.end() && m->is_object())
                if (auto t = m->find("content"); t != m->end() && t->is_string())
                    text = t->get<std::string>();
            c.erase(part);
            c["text"] = text;
            c["logprobs"] = nullptr;
            if (!c.contains("finish_reason")) c["finish_reason"] = nullptr;
        }
    return j;
}

}  // namespace fluoro::app
