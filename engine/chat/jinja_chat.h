// A conversation rendered by the model's own Jinja chat template (tokenizer.chat_template), with
// the variables transformers' apply_chat_template passes (messages, tools=None, documents=None,
// add_generation_prompt, bos_token, eos_token, enable_thinking when set) and chat_render.h's BOS
// rule: a leading bos_token text is taken off `text` and reported as template_bos. That includes a
// template whose own first text merely equals the BOS text (SmolLM2: ChatML, BOS "<|im_start|>"),
// which render_chat leaves in: tokenized with the BOS put first, the tokens are the same.
// ChatFormat (chat_format.h) renders through it; tested on the jinja2 fixture.
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
    std::string_view tools_json;          // the tools variable: "" = None, else a JSON array
};

// Throws what the template throws (jinja::TemplateRaised for raise_exception, ...).
RenderedChat render_chat_jinja(const jinja::Template& tmpl, std::span<const ChatMessage> messages,
                               const JinjaChatInput& in);

}  // namespace fluoro
