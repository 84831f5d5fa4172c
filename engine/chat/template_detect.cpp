#include "chat/template_detect.h"

namespace fluoro {

std::string_view chat_template_name(ChatTemplateKind kind) {
    switch (kind) {
        case ChatTemplateKind::ChatML:
            return "chatml";
        case ChatTemplateKind::Llama3:
            return "llama3";
        case ChatTemplateKind::Gemma:
            return "gemma";
        case ChatTemplateKind::Unknown:
            break;
    }
    return "unknown";
}

ChatTemplateGuess detect_chat_template(std::string_view jinja, std::string_view arch) {
    const auto has = [&](std::string_view marker) { return jinja.find(marker) != jinja.npos; };
    // Same precedence as llama.cpp's llm_chat_detect_template for the families we render.
    if (has("<|im_start|>")) return {ChatTemplateKind::ChatML, "template text"};
    if (has("<start_of_turn>")) return {ChatTemplateKind::Gemma, "template text"};
    if (has("<|start_header_id|>") && has("<|end_header_id|>"))
        return {ChatTemplateKind::Llama3, "template text"};
    if (jinja.empty()) {
        if (arch.starts_with("gemma"))
            return {ChatTemplateKind::Gemma, "architecture (no template in file)"};
        if (arch == "qwen2")
            return {ChatTemplateKind::ChatML, "architecture (no template in file)"};
    }
    return {ChatTemplateKind::ChatML, "fallback"};
}

}  // namespace fluoro
