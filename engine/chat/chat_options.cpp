#include "chat/chat_options.h"

namespace fluoro {
namespace {

constexpr std::string_view kHeader = "<|im_start|>system";
constexpr std::string_view kEnd = "<|im_end|>";

// The value of the Jinja string literal whose opening quote is at `quote` (jinja2 decodes it like
// a Python literal). nullopt when it is unterminated or uses an escape we do not decode.
std::optional<std::string> literal_at(std::string_view jinja, size_t quote) {
    const char q = jinja[quote];
    std::string value;
    for (size_t i = quote + 1; i < jinja.size(); ++i) {
        const char c = jinja[i];
        if (c == q) return value;
        if (c != '\\') {
            value += c;
            continue;
        }
        if (++i == jinja.size()) return std::nullopt;
        switch (jinja[i]) {
            case 'n':
                value += '\n';
                break;
            case 't':
                value += '\t';
                break;
            case 'r':
                value += '\r';
                break;
            case '\\':
                value += '\\';
                break;
            case '\'':
                value += '\'';
                break;
            case '"':
                value += '"';
                break;
            default:
                return std::nullopt;
        }
    }
    return std::nullopt;
}

}  // namespace

ChatRenderOptions chat_options_from_template(std::string_view jinja) {
    ChatRenderOptions opt;
    for (size_t at = jinja.find(kHeader); at != std::string_view::npos;
         at = jinja.find(kHeader, at + 1)) {
        if (at == 0 || (jinja[at - 1] != '\'' && jinja[at - 1] != '"')) continue;
        const auto literal = literal_at(jinja, at - 1);
        if (!literal) continue;
        // Exactly: header, newline, prompt, <|im_end|>, newline.
        std::string_view v = *literal;
        if (!v.starts_with(kHeader)) continue;
        v.remove_prefix(kHeader.size());
        if (!v.starts_with('\n') || !v.ends_with(std::string(kEnd) + "\n")) continue;
        v = v.substr(1, v.size() - 1 - kEnd.size() - 1);
        if (v.find(kEnd) != std::string_view::npos) continue;
        opt.default_system_prompt = std::string(v);
        break;
    }
    return opt;
}

}  // namespace fluoro
