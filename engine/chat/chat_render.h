// Turning a conversation into the exact prompt text a model's chat template produces, for the
// template families we render natively (ChatML, Llama 3, Gemma): the same bytes as the model's
// Jinja template rendered by Hugging Face / llama.cpp (checked against jinja2 renderings of the
// real templates in tests/reference/fixtures/chat_templates.json), without running Jinja.
//
// BOS rule
// --------
// A template that emits `{{ bos_token }}` (Gemma; Llama 3 before its first message) would put the
// BOS text at the start of the prompt. We never write it into `text`; RenderedChat::template_bos
// says the template wanted it. The caller tokenizes `text` with special tokens parsed and puts
// exactly one BOS token first when needs_bos(add_bos_token) is true, i.e. when the template wanted
// one OR the tokenizer adds one (tokenizer.ggml.add_bos_token). That is what llama.cpp does: it
// strips a leading BOS string from the rendered text when add_bos is set, to avoid a double BOS,
// and leaves it in (to be tokenized as the BOS token) when it is not (ggml-org/llama.cpp#15086).
// Text that merely looks like the BOS token is not touched: SmolLM2's BOS is "<|im_start|>", and a
// ChatML prompt starts with that text as the template's own output (SmolLM2's add_bos is false).
// A trailing EOS string is never stripped (llama.cpp strips it only when add_eos is set, which
// none of these families' models set).
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "chat/chat_options.h"
#include "chat/template_detect.h"

namespace fluoro {

// A call an assistant message made (OpenAI's message.tool_calls[i]).
struct ChatToolCall {
    std::string id;
    std::string name;
    std::string arguments;  // JSON text (an object, as OpenAI clients send it)
};

struct ChatMessage {
    ChatMessage() = default;
    ChatMessage(std::string r, std::string c) : role(std::move(r)), content(std::move(c)) {}

    std::string role;  // "system", "user", "assistant" (or "tool": Jinja templates only)
    std::string content;
    // The rest only reach a model's own Jinja template (the native families refuse them).
    bool content_null = false;  // the client sent content: null (templates test for None)
    std::vector<ChatToolCall> tool_calls;  // assistant messages
    std::string tool_call_id;              // role "tool": the call this result answers
    std::string name;                      // role "tool": the function's name, when given
    std::string reasoning_content;         // assistant messages: the thinking, when given

    bool has_tool_parts() const {
        return !tool_calls.empty() || !tool_call_id.empty() || !name.empty() || role == "tool";
    }
};

struct RenderedChat {
    std::string text;           // the prompt, without any BOS text
    bool template_bos = false;  // the template emits bos_token first (see the BOS rule)
    // The kind was Unknown and the prompt was rendered as ChatML: the UI should say
    // "unknown chat template, using ChatML".
    bool unknown_template = false;

    bool needs_bos(bool tokenizer_add_bos) const { return template_bos || tokenizer_add_bos; }
};

// Renders `messages` as the template family `kind` does; with add_generation_prompt, the header of
// an assistant turn follows, ready for generation.
//   ChatML : "<|im_start|>{role}\n{content}<|im_end|>\n" per message, content verbatim;
//            opt.default_system_prompt injected first when the first message is not a system one.
//   Llama3 : "<|start_header_id|>{role}<|end_header_id|>\n\n{content|trim}<|eot_id|>"; BOS before
//            the first message (none for an empty conversation); prompt header for "assistant".
//   Gemma  : a leading system message's text + "\n\n" opens the first user turn (not trimmed);
//            "assistant" is written "model";
//            "<start_of_turn>{role}\n{content|trim}<end_of_turn>\n"; always BOS; generation prompt
//            "<start_of_turn>model\n".
//   Unknown: ChatML, with unknown_template set.
// `trim` is Python's str.strip() (see python_strip.h).
// Throws fluoro::Error naming the message index for a role other than system/user/assistant, and
// for Gemma when the conversation is empty or the roles after the system message do not alternate
// user/assistant starting with user (Gemma's template raises there too; it would accept a system
// message at an odd position and render a "system" turn, which we reject as well).
RenderedChat render_chat(ChatTemplateKind kind, std::span<const ChatMessage> messages,
                         bool add_generation_prompt, const ChatRenderOptions& opt = {});

}  // namespace fluoro
