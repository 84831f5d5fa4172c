// A conversation rendered by the model's own Jinja chat template (tokenizer.chat_template), with
// the variables transformers' apply_chat_template passes (messages, tools=None, documents=None,
// add_generation_prompt, bos_token, eos_token, enable_thinking when set) and chat_render.h's BOS
// rule: a leading bos_token text is taken off `text` and reported as template_bos. That includes a
// template whose own first text merely equals the BOS text (SmolLM2: ChatML, BOS "<|im_start|>"),
// which render_chat leaves in: tokenized with the BOS put first, the tokens are the same.
// ChatFormat (chat_format.h) renders through it; tested on the jinja2 fixture.
// Messages are passed as transformers passes an OpenAI-style conversation: content (None when
// content_null), tool_calls as [{"id", "type": "function", "function": {"name", "arguments": the
// parsed JSON object}}], tool_call_id and name when set, reasoning_content when set.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "chat/chat_render.h"
#include "chat/jinja/jinja_template.h"

namespace fluoro {

struct JinjaChatInput {
    std::string_view bos_token;
    std::string_view eos_token;
    bool add_generation_prompt = true;
    std::optional<bool> enable_thinking;  // passed only when set, as a template kwarg
    // The request's tool definitions as a JSON array text ([{"type": "function", "function":
    // {...}}, ...]), passed parsed as `tools`; "" passes None (no tools offered).
    std::string_view tools_json;
};

// Throws what the template throws (jinja::TemplateRaised for raise_exception, ...).
RenderedChat render_chat_jinja(const jinja::Template& tmpl, std::span<const ChatMessage> messages,
                               const JinjaChatInput& in);

}  // namespace fluoro
