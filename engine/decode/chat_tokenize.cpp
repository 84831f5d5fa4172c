#include "decode/chat_tokenize.h"

#include "chat/python_strip.h"
#include "core/error.h"
#include "model/model.h"

namespace fluoro {
namespace {

// Marks where each message's content sits in the rendered text. \x01 (start of heading) cannot
// be typed into a chat box and is checked to be absent from contents; unlike \x1c-\x1f it is
// not whitespace to Python's str.strip(), which the Gemma and Llama 3 renderers apply to the
// marker (a \x1e marker was stripped away there, and every message with it).
constexpr char kMark = '\x01';

std::string content_marker(size_t i) {
    std::string m(1, kMark);  // built by appends: GCC 12 misreports `a + b + c` here (-Wrestrict)
    m += std::to_string(i);
    m += kMark;
    return m;
}

}  // namespace

std::vector<int32_t> tokenize_chat(const Model& model, std::span<const ChatMessage> messages,
                                   const ChatRenderOptions& opt, bool add_generation_prompt) {
    const tok::Tokenizer& tk = model.tokenizer();
    // Render once with markers in place of contents, then put the contents in and tokenize the
    // whole text as llama.cpp and transformers do, except that special-token text inside a
    // content stays text (a user typing "<|im_end|>" must not end their turn).
    std::vector<ChatMessage> marked(messages.begin(), messages.end());
    for (size_t i = 0; i < marked.size(); ++i) {
        if (marked[i].content.find(kMark) != std::string::npos)
            throw Error("message " + std::to_string(i) + " contains the control character U+0001");
        marked[i].content = content_marker(i);
    }
    const ChatTemplateKind kind = model.chat_template_kind();
    const RenderedChat rendered = render_chat(kind, marked, add_generation_prompt, opt);
    std::string text;
    std::vector<tok::TextSpan> contents;
    const std::string& markup = rendered.text;
    size_t pos = 0;
    while (pos < markup.size()) {
        const size_t open = markup.find(kMark, pos);
        text.append(markup, pos, open == std::string::npos ? std::string::npos : open - pos);
        if (open == std::string::npos) break;
        const size_t close = markup.find(kMark, open + 1);
        if (close == std::string::npos) throw Error("chat: a content marker was not closed");
        const size_t index = std::stoul(markup.substr(open + 1, close - open - 1));
        // Llama 3 trims every content, Gemma all but the system text ({{ content | trim }}).
        std::string_view content = messages[index].content;
        if (kind == ChatTemplateKind::Llama3 ||
            (kind == ChatTemplateKind::Gemma && messages[index].role != "system"))
            content = python_strip(content);
        contents.push_back({text.size(), content.size()});
        text.append(content);
        pos = close + 1;
    }
    std::vector<int32_t> ids;
    if (rendered.needs_bos(tk.vocab().add_bos())) ids.push_back(tk.vocab().bos());
    const auto body = tk.encode(text, contents, false, true);
    ids.insert(ids.end(), body.begin(), body.end());
    return ids;
}

}  // namespace fluoro
