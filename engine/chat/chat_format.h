// How a model turns a conversation into prompt text: the Jinja chat template its GGUF ships
// (tokenizer.chat_template), rendered by our interpreter (chat/jinja/) as transformers and
// llama.cpp render it — or, only when the file has no template or one we cannot parse, a
// hard-coded family (chat_render.h) with a notice that says so and why.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "chat/chat_options.h"
#include "chat/chat_render.h"
#include "chat/jinja/jinja_template.h"
#include "chat/template_detect.h"
#include "chat/tool_calls.h"

namespace fluoro {

// What a request adds to a conversation beyond its messages (OpenAI's tools, vLLM's
// chat_template_kwargs.enable_thinking).
struct ChatExtras {
    std::string tools_json;  // a JSON array of tool definitions; "" for none
    std::optional<bool> enable_thinking;
};

class ChatFormat {
  public:
    // `template_text` is tokenizer.chat_template ("" when absent), `arch` general.architecture,
    // `bos_text`/`eos_text` the texts of the vocabulary's BOS/EOS tokens (bos_token/eos_token of
    // the template; "" when the vocabulary has none). Never throws for a bad template: it falls
    // back and says why in note().
    static ChatFormat from_file(std::string_view template_text, std::string_view arch,
                                std::string bos_text, std::string eos_text);

    // Renders `messages` (chat_render.h's BOS rule applies to both paths). Throws fluoro::Error
    // with the template's own message when the template raises (e.g. "Conversation roles must
    // alternate user/assistant/user/assistant/..."), or naming the message the family refuses.
    // `extras` (tools, enable_thinking, and messages' tool parts) reach only the file's own
    // template: the fallback families throw fluoro::Error saying tools need one.
    RenderedChat render(std::span<const ChatMessage> messages, bool add_generation_prompt,
                        const ChatExtras& extras = {}) const;

    // How the template teaches the model to call tools (None without a file template).
    ToolCallSyntax tool_call_syntax() const { return tool_syntax_; }

    // True when render() runs the file's own template.
    bool uses_file_template() const { return jinja_.has_value(); }
    // "jinja" when the file's template is rendered, otherwise the family's name ("chatml", ...).
    std::string_view name() const;
    // The family the template's markers suggest (informative; what a fallback renders).
    ChatTemplateKind family() const { return family_; }
    // Empty when the file's template is rendered; otherwise one line for the user saying which
    // format is used instead and why (no template in the file / the parse error with line:col).
    const std::string& note() const { return note_; }

  private:
    std::optional<jinja::Template> jinja_;
    ChatTemplateKind family_ = ChatTemplateKind::ChatML;
    ChatRenderOptions family_options_;
    std::string bos_text_, eos_text_;
    std::string note_;
    ToolCallSyntax tool_syntax_ = ToolCallSyntax::None;
};

}  // namespace fluoro
