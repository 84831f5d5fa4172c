// What a model's Jinja chat template says beyond its family (ChatTemplateKind): today, the
// default system prompt a ChatML template injects when a conversation starts without one
// (SmolLM2's "You are a helpful AI assistant named SmolLM, ..."). Read from the template text, so
// a generic ChatML template (or another model's) never gets SmolLM's prompt.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fluoro {

struct ChatRenderOptions {
    // ChatML only: rendered as `<|im_start|>system\n{this}<|im_end|>\n` before the first message
    // when there is at least one message and the first is not a system message. nullopt = none.
    std::optional<std::string> default_system_prompt;
};

// Finds a default system prompt in a ChatML template: a string literal of exactly the form
// '<|im_start|>system\n{prompt}<|im_end|>\n' (quoted with ' or ", newline written as a real
// newline or as the \n escape), the shape SmolLM2's and Qwen2's templates use inside
// "if the first message is not a system message". Anything else (no such literal, an escape we
// do not decode) gives no default prompt.
ChatRenderOptions chat_options_from_template(std::string_view jinja);

}  // namespace fluoro
