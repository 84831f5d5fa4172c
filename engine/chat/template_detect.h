// Recognizing a model's chat template family from tokenizer.chat_template, the way llama.cpp's
// built-in renderers are chosen: by marker substrings, not by running Jinja.
#pragma once

#include <string_view>

namespace fluoro {

enum class ChatTemplateKind { ChatML, Llama3, Gemma, Unknown };

struct ChatTemplateGuess {
    ChatTemplateKind kind = ChatTemplateKind::Unknown;
    // How it was decided: "template text", "architecture (no template in file)", or
    // "fallback" (unknown template: ChatML is used, and the caller shows a warning).
    std::string_view source;
};

std::string_view chat_template_name(ChatTemplateKind kind);

// `jinja` is the tokenizer.chat_template text ("" when absent); `arch` is general.architecture.
ChatTemplateGuess detect_chat_template(std::string_view jinja, std::string_view arch);

}  // namespace fluoro
