#include "chat/chat_render.h"

#include <string_view>

#include "chat/python_strip.h"
#include "core/error.h"

namespace fluoro {
namespace {

[[noreturn]] void bad_message(size_t index, const std::string& what) {
    throw Error("chat message " + std::to_string(index) + ": " + what);
}

void check_roles(std::span<const ChatMessage> messages) {
    for (size_t i = 0; i < messages.size(); ++i) {
        const std::string& role = messages[i].role;
        if (role != "system" && role != "user" && role != "assistant")
            bad_message(i, "unknown role '" + role + "' (expected system, user or assistant)");
    }
}

void render_chatml(std::span<const ChatMessage> messages, bool add_generation_prompt,
                   const ChatRenderOptions& opt, std::string& out) {
    const auto turn = [&](std::string_view role, std::string_view content) {
        out.append("<|im_start|>").append(role).append("\n").append(content).append("<|im_end|>\n");
    };
    if (opt.default_system_prompt && !messages.empty() && messages[0].role != "system")
        turn("system", *opt.default_system_prompt);
    for (const ChatMessage& m : messages) turn(m.role, m.content);
    if (add_generation_prompt) out.append("<|im_start|>assistant\n");
}

void render_llama3(std::span<const ChatMessage> messages, bool add_generation_prompt,
                   std::string& out) {
    for (const ChatMessage& m : messages) {
        out.append("<|start_header_id|>").append(m.role).append("<|end_header_id|>\n\n");
        out.append(python_strip(m.content)).append("<|eot_id|>");
    }
    if (add_generation_prompt) out.append("<|start_header_id|>assistant<|end_header_id|>\n\n");
}

void render_gemma(std::span<const ChatMessage> messages, bool add_generation_prompt,
                  std::string& out) {
    if (messages.empty()) throw Error("chat: Gemma's template needs at least one message");
    size_t first = 0;
    std::string_view system_prefix;
    if (messages[0].role == "system") {
        system_prefix = messages[0].content;  // not trimmed, as in the template
        first = 1;
    }
    for (size_t i = first; i < messages.size(); ++i) {
        const bool user_turn = (i - first) % 2 == 0;
        const std::string_view expected = user_turn ? "user" : "assistant";
        if (messages[i].role != expected) {
            bad_message(i,
                        "Gemma needs the roles after the system message to alternate "
                        "user/assistant starting with user: expected " +
                            std::string(expected) + ", got " + messages[i].role);
        }
        out.append("<start_of_turn>").append(user_turn ? "user" : "model").append("\n");
        if (i == first && first == 1) out.append(system_prefix).append("\n\n");
        out.append(python_strip(messages[i].content)).append("<end_of_turn>\n");
    }
    if (add_generation_prompt) out.append("<start_of_turn>model\n");
}

}  // namespace

RenderedChat render_chat(ChatTemplateKind kind, std::span<const ChatMessage> messages,
                         bool add_generation_prompt, const ChatRenderOptions& opt) {
    check_roles(messages);
    RenderedChat r;
    switch (kind) {
        case ChatTemplateKind::Llama3:
            r.template_bos = !messages.empty();
            render_llama3(messages, add_generation_prompt, r.text);
            break;
        case ChatTemplateKind::Gemma:
            r.template_bos = true;
            render_gemma(messages, add_generation_prompt, r.text);
            break;
        case ChatTemplateKind::Unknown:
            r.unknown_template = true;
            render_chatml(messages, add_generation_prompt, opt, r.text);
            break;
        case ChatTemplateKind::ChatML:
            render_chatml(messages, add_generation_prompt, opt, r.text);
            break;
    }
    return r;
}

}  // namespace fluoro
