// An OpenAI chat-completion request body (POST /v1/chat/completions) parsed and validated into
// the engine's stateless Complete command. Anything the engine cannot honour is rejected with a
// RequestError naming the parameter, which the server returns as a 400 in OpenAI's error shape.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "runtime/engine_commands.h"
#include "sampling/sampling_params.h"

namespace fluoro::app {

// A request the server refuses: message for the client, param the offending field ("" if none).
class RequestError : public std::runtime_error {
  public:
    RequestError(const std::string& message, std::string param)
        : std::runtime_error(message), param_(std::move(param)) {}
    const std::string& param() const { return param_; }

  private:
    std::string param_;
};

struct ChatRequest {
    std::string model;  // echoed in the response ("" when the request has none)
    Complete complete;  // messages, this request's sampling (always set), max_tokens, stop
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage
    // logprobs: each generated token's log probability (under the sampling distribution:
    // softmax of the penalized logits / temperature) and, top_logprobs > 0, that many most likely
    // alternatives (0..20, as OpenAI allows; needs logprobs).
    bool logprobs = false;
    int top_logprobs = 0;
    // POST /v1/completions: a plain-text prompt (Complete::raw), answered as text_completion
    // objects (to_text_completion in chat_response.h).
    bool legacy = false;
    // n: how many choices (1..kMaxChoices). They are generated one after another while the
    // request holds the engine, choice i sampling with the request's seed + i (each run restarts
    // the random stream from its seed, so the same seed would give the same text n times).
    int n = 1;
};
inline constexpr int kMaxChoices = 16;

// Parses `body`. `defaults` are the server's sampling settings, which the request's temperature,
// top_p, seed, frequency_penalty and presence_penalty override. Content is a string or an array of
// {"type":"text","text":...} parts (concatenated). "developer" is read as "system". Only the first
// message may be a system one and the last must be a user one. `stop` is a string or up to 4.
// Throws RequestError.
ChatRequest parse_chat_request(std::string_view body, const SamplingParams& defaults);

// POST /v1/completions (OpenAI's legacy text completion): `prompt` a string or an array of one
// string, completed as plain text (no chat template); max_tokens defaults to 16 as OpenAI's does;
// model, stream, stream_options, n, stop and the sampling fields as for chat. echo, suffix,
// best_of > 1 and the legacy logprobs are refused naming them. Throws RequestError.
ChatRequest parse_completion_request(std::string_view body, const SamplingParams& defaults);

}  // namespace fluoro::app
