// The JSON an OpenAI-compatible server answers with: chat.completion objects, streamed
// chat.completion.chunk objects, usage and the llama.cpp-style `timings` block, and error bodies.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_render.h"
#include "telemetry/events.h"

namespace fluoro::app {

// The identity every object of one completion carries.
struct CompletionIds {
    std::string id;     // "chatcmpl-..."
    int64_t created;    // seconds since the Unix epoch
    std::string model;  // echoed from the request
};

// A fresh "chatcmpl-<hex>" id and the current time.
CompletionIds new_completion_ids(std::string model);

// RunFinished.stop as an OpenAI finish_reason: "eog" and "cancelled" -> "stop", "max_tokens",
// "context_full" and "timeout" (the server's request timeout) -> "length".
std::string finish_reason(const RunFinished& f);

nlohmann::json usage_json(const RunFinished& f);
// More generated tokens in a usage object (the other choices of an n > 1 request: the prompt is
// counted once).
void add_completion_tokens(nlohmann::json& usage, int64_t tokens);
// `cache` (the run's prompt-cache telemetry, when the engine reported it) adds a "cache" object:
// where the reused span came from, where the prompt diverged from what was cached, evictions.
nlohmann::json timings_json(const RunFinished& f, const PrefixCacheEvent* cache = nullptr);

// One generated token in OpenAI's logprobs shape: {"token", "logprob", "bytes", "top_logprobs":
// [the first `top` alternatives, each {"token", "logprob", "bytes"}]}. "token" is the
// vocabulary's text (a piece of a UTF-8 character shows as U+FFFD there; "bytes" are exact).
nlohmann::json logprob_entry(const TokenEvent& t, int top);

// What a finished reply says, as the API returns it: the answer, the model's reasoning apart
// (when the engine split one off: `reasoning_content`), and its tool calls, read in `syntax`
// (the model's, RunStarted::tool_call_syntax; None when no tools were offered: then nothing is
// parsed), with the text around the calls as content.
struct ReplyParts {
    std::string content;
    std::string reasoning;
    std::vector<ChatToolCall> tool_calls;
};
ReplyParts reply_parts(const RunFinished& f, ToolCallSyntax syntax);
// OpenAI's tool_calls array; with_index for a streamed delta (each entry has its "index").
nlohmann::json tool_calls_json(const std::vector<ChatToolCall>& calls, bool with_index);

// The whole non-streaming response; `logprobs` (entries of logprob_entry) becomes the choice's
// {"content": [...]}, null when not asked for. `parts` (reply_parts) gives the message's
// content, reasoning_content and tool_calls (finish_reason "tool_calls"); without it the
// content is the reply as generated.
nlohmann::json completion_json(const CompletionIds& ids, const RunFinished& f,
                               const PrefixCacheEvent* cache = nullptr,
                               const nlohmann::json* logprobs = nullptr,
                               const ReplyParts* parts = nullptr);
// One streamed chunk: a delta with `content` (and role "assistant" when first), or with
// finish_reason set when finish_reason is non-empty; `logprobs` as in completion_json, for the
// tokens this chunk carries.
nlohmann::json chunk_json(const CompletionIds& ids, std::string_view content, bool first,
                          std::string_view finish_reason = {},
                          const nlohmann::json* logprobs = nullptr);
// The last streamed chunk with stream_options.include_usage: usage + timings, no choices.
nlohmann::json usage_chunk_json(const CompletionIds& ids, const RunFinished& f,
                                const PrefixCacheEvent* cache = nullptr);

// A chat.completion or chat.completion.chunk object as OpenAI's legacy text completion
// (POST /v1/completions) answers: object "text_completion", id "cmpl-...", each choice's
// message or delta content as "text" (reasoning and tool calls dropped: a plain-text prompt has
// neither), "logprobs" null; usage and timings kept. Any other JSON (an error) is returned as is.
nlohmann::json to_text_completion(nlohmann::json chat);

// {"error":{"message","type","param","code"}}; param and code are null when empty.
nlohmann::json error_json(std::string_view message, std::string_view type = "invalid_request_error",
                          std::string_view param = {}, std::string_view code = {});

// A run that failed because its prompt does not fit the context (the engine's
// RunFinished::overflow_*): {N, M}; {0, 0} for any other error.
struct ContextOverflow {
    int64_t prompt_tokens = 0, context_tokens = 0;
    explicit operator bool() const { return prompt_tokens > 0; }
};
ContextOverflow context_overflow(const RunFinished& f);
// OpenAI's answer to that: code "context_length_exceeded", param "messages", both counts.
nlohmann::json context_overflow_json(const ContextOverflow& o);

// "data: <json>\n\n"
std::string sse_event(const nlohmann::json& j);

}  // namespace fluoro::app
