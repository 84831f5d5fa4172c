#include "chat/chat_format.h"

#include <algorithm>

#include "chat/jinja_chat.h"
#include "core/error.h"

namespace fluoro {

ChatFormat ChatFormat::from_file(std::string_view template_text, std::string_view arch,
                                 std::string bos_text, std::string eos_text) {
    ChatFormat f;
    f.bos_text_ = std::move(bos_text);
    f.eos_text_ = std::move(eos_text);
    const ChatTemplateGuess guess = detect_chat_template(template_text, arch);
    f.family_ = guess.kind;
    if (!template_text.empty()) {
        try {
            f.jinja_ = jinja::Template::parse(template_text);
            f.tool_syntax_ = detect_tool_call_syntax(template_text);
            return f;
        } catch (const Error& e) {
            f.note_ = "the file's chat template could not be parsed (" + std::string(e.what()) +
                      "); using the " + std::string(chat_template_name(f.family_)) +
                      " format instead";
        }
    } else if (guess.source == "fallback") {
        f.note_ = "no chat template in the file and its architecture '" + std::string(arch) +
                  "' implies none; using ChatML";
    } else {
        f.note_ = "no chat template in the file; using the " +
                  std::string(chat_template_name(f.family_)) + " format its architecture '" +
                  std::string(arch) + "' implies";
    }
    f.family_options_ = chat_options_from_template(template_text);
    return f;
}

std::string_view ChatFormat::name() const {
    return jinja_ ? std::string_view("jinja") : chat_template_name(family_);
}

RenderedChat ChatFormat::render(std::span<const ChatMessage> messages, bool add_generation_prompt,
                                const ChatExtras& extras) const {
    if (!jinja_) {
        const bool tool_parts =
            !extras.tools_json.empty() ||
            std::any_of(messages.begin(), messages.end(),
                        [](const ChatMessage& m) { return m.has_tool_parts(); });
        if (tool_parts)
            throw Error(
                "tools and tool messages need the model's own chat template; this file "
                "has none usable (" +
                note_ + ")");
        return render_chat(family_, messages, add_generation_prompt, family_options_);
    }
    JinjaChatInput in;
    in.tools_json = extras.tools_json;
    in.enable_thinking = extras.enable_thinking;
    in.bos_token = bos_text_;
    in.eos_token = eos_text_;
    in.add_generation_prompt = add_generation_prompt;
    try {
        return render_chat_jinja(*jinja_, messages, in);
    } catch (const jinja::TemplateRaised& e) {
        throw Error(std::string("the model's chat template refused the conversation: ") + e.what());
    } catch (const Error& e) {
        throw Error(std::string("the model's chat template failed: ") + e.what());
    }
}

}  // namespace fluoro
