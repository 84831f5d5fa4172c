#include "decode/chat_tokenize.h"

#include "chat/chat_contents.h"
#include "core/error.h"
#include "model/model.h"

namespace fluoro {

std::vector<int32_t> tokenize_chat(const Model& model, std::span<const ChatMessage> messages,
                                   bool add_generation_prompt, const ChatExtras& extras) {
    const tok::Tokenizer& tk = model.tokenizer();
    // The prompt is the template's rendering of the conversation, tokenized as a whole as
    // llama.cpp and transformers do, except that special-token text inside a content stays text
    // (a user typing "<|im_end|>" must not end their turn).
    const ChatWithContents r =
        render_locating_contents(model.chat_format(), messages, add_generation_prompt, extras);
    std::vector<tok::TextSpan> literal;
    if (r.contents) {
        for (const ContentSpan& c : *r.contents) literal.push_back({c.offset, c.length});
    } else {
        // Without knowing where the contents are, a content's special-token text would be
        // parsed: refuse that case; all others tokenize exactly as llama.cpp does.
        for (size_t i = 0; i < messages.size(); ++i) {
            const std::string& c = messages[i].content;
            if (tk.encode(c, false, true) != tk.encode(c, false, false))
                throw Error("chat message " + std::to_string(i) +
                            " contains special-token text, and this model's chat template "
                            "rewrites message contents, so it cannot be kept as plain text");
        }
    }
    std::vector<int32_t> ids;
    if (r.chat.needs_bos(tk.vocab().add_bos())) ids.push_back(tk.vocab().bos());
    const auto body = tk.encode(r.chat.text, literal, false, true);
    ids.insert(ids.end(), body.begin(), body.end());
    return ids;
}

}  // namespace fluoro
