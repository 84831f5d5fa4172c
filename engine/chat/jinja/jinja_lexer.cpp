#include "chat/jinja/jinja_lexer.h"

#include <cctype>

#include "chat/jinja/jinja_error.h"
#include "chat/jinja/jinja_utf8.h"

namespace fluoro::jinja {
namespace {

bool is_ws(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool is_name_start(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_name_char(char c) {
    return is_name_start(c) || std::isdigit(static_cast<unsigned char>(c));
}

class Lexer {
  public:
    explicit Lexer(std::string_view src) : src_(src) {}

    std::vector<Token> run() {
        while (pos_ < src_.size()) root();
        out_.push_back({TokenType::End, "", src_.size()});
        return std::move(out_);
    }

  private:
    [[noreturn]] void fail(std::size_t at, const std::string& what) const {
        throw TemplateSyntaxError(position(src_, at) + ": " + what);
    }

    bool at(std::size_t p, std::string_view s) const { return src_.substr(p, s.size()) == s; }

    // Text up to the next tag, then the tag. Implements the whitespace rules of the header.
    void root() {
        std::size_t tag = pos_;
        char kind = 0;
        while (true) {
            tag = src_.find('{', tag);
            if (tag == std::string_view::npos || tag + 1 >= src_.size()) break;
            const char c = src_[tag + 1];
            if (c == '{' || c == '%' || c == '#') {
                kind = c;
                break;
            }
            ++tag;
        }
        if (kind == 0) {
            emit_text(src_.substr(pos_));
            pos_ = src_.size();
            return;
        }
        std::string_view text = src_.substr(pos_, tag - pos_);
        const char sign = tag + 2 < src_.size() ? src_[tag + 2] : 0;
        if (sign == '-') {
            while (!text.empty() && is_ws(text.back())) text.remove_suffix(1);
        } else if (sign != '+' && kind != '{') {
            // lstrip_blocks: drop the tag's indentation when only whitespace precedes it on its
            // line.
            const auto nl = text.rfind('\n');
            const std::size_t line_start = nl == std::string_view::npos ? 0 : nl + 1;
            if (line_start > 0 || line_starting_) {
                bool all_ws = line_start < text.size();
                for (std::size_t i = line_start; i < text.size(); ++i)
                    if (!is_ws(text[i])) all_ws = false;
                if (all_ws) text = text.substr(0, line_start);
            }
        }
        emit_text(text);
        pos_ = tag + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
        if (kind == '#')
            comment(tag);
        else if (kind == '%')
            block(tag);
        else
            variable(tag);
    }

    void emit_text(std::string_view text) {
        if (!text.empty()) out_.push_back({TokenType::Text, std::string(text), pos_});
    }

    // After a block or comment end: `-` eats all following whitespace, `+` nothing,
    // otherwise trim_blocks eats one newline.
    void after_block_end(char sign) {
        if (sign == '-') {
            while (pos_ < src_.size() && is_ws(src_[pos_])) ++pos_;
        } else if (sign != '+' && pos_ < src_.size() && src_[pos_] == '\n') {
            ++pos_;
        }
        line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
    }

    void comment(std::size_t begin) {
        const auto end = src_.find("#}", pos_);
        if (end == std::string_view::npos) fail(begin, "unterminated comment");
        const char sign =
            end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : 0;
        pos_ = end + 2;
        after_block_end(sign);
    }

    void block(std::size_t begin) {
        // {% raw %}...{% endraw %}: the body is text, tags inside it included.
        std::size_t p = pos_;
        while (p < src_.size() && is_ws(src_[p])) ++p;
        if (at(p, "raw") && (p + 3 >= src_.size() || !is_name_char(src_[p + 3]))) {
            std::size_t q = p + 3;
            while (q < src_.size() && is_ws(src_[q])) ++q;
            char sign = 0;
            if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) sign = src_[q++];
            if (at(q, "%}")) {
                pos_ = q + 2;
                after_block_end(sign);
                raw_body(begin);
                return;
            }
        }
        out_.push_back({TokenType::BlockBegin, "", begin});
        expression_tokens(begin, "%}");
    }

    void raw_body(std::size_t begin) {
        std::size_t search = pos_;
        while (true) {
            const auto tag = src_.find("{%", search);
            if (tag == std::string_view::npos)
                fail(begin, "unterminated raw block (missing endraw)");
            std::size_t p = tag + 2;
            const char open_sign =
                p < src_.size() && (src_[p] == '-' || src_[p] == '+') ? src_[p++] : 0;
            while (p < src_.size() && is_ws(src_[p])) ++p;
            if (!at(p, "endraw")) {
                search = tag + 2;
                continue;
            }
            p += 6;
            while (p < src_.size() && is_ws(src_[p])) ++p;
            char sign = 0;
            if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) sign = src_[p++];
            if (!at(p, "%}")) fail(tag, "malformed endraw tag");
            std::string_view body = src_.substr(pos_, tag - pos_);
            if (open_sign == '-')
                while (!body.empty() && is_ws(body.back())) body.remove_suffix(1);
            emit_text(body);
            pos_ = p + 2;
            after_block_end(sign);
            return;
        }
    }

    void variable(std::size_t begin) {
        out_.push_back({TokenType::VariableBegin, "", begin});
        expression_tokens(begin, "}}");
    }

    // Tokens inside {{ }} or {% %} up to `close` (not counted while brackets are open, so
    // {{ {'a': {'b': 1}} }} works as in Jinja2).
    void expression_tokens(std::size_t begin, std::string_view close) {
        int depth = 0;
        while (true) {
            while (pos_ < src_.size() && is_ws(src_[pos_])) ++pos_;
            if (pos_ >= src_.size())
                fail(begin, std::string("unexpected end of template, expected '") +
                                std::string(close) + "'");
            if (depth == 0) {
                char sign = 0;
                std::size_t p = pos_;
                if ((src_[p] == '-' || src_[p] == '+') && at(p + 1, close)) sign = src_[p++];
                if (at(p, close) && !(sign == '+' && close == "}}")) {
                    out_.push_back(
                        {close == "}}" ? TokenType::VariableEnd : TokenType::BlockEnd, "", pos_});
                    pos_ = p + 2;
                    if (close == "%}") {
                        after_block_end(sign);
                    } else {
                        if (sign == '-')
                            while (pos_ < src_.size() && is_ws(src_[pos_])) ++pos_;
                        line_starting_ = src_[pos_ - 1] == '\n';
                    }
                    return;
                }
            }
            one_token(depth);
        }
    }

    void one_token(int& depth) {
        const std::size_t start = pos_;
        const char c = src_[pos_];
        if (is_name_start(c)) {
            while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
            out_.push_back({TokenType::Name, std::string(src_.substr(start, pos_ - start)), start});
            return;
        }
        if (std::isdigit(static_cast<unsigned char>(c))) {
            number();
            return;
        }
        if (c == '\'' || c == '"') {
            string_literal();
            return;
        }
        static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
        for (auto op : kTwo) {
            if (at(pos_, op)) {
                out_.push_back({TokenType::Operator, std::string(op), start});
                pos_ += 2;
                return;
            }
        }
        if (std::string_view("+-*/%~()[]{},.:|=<>").find(c) == std::string_view::npos)
            fail(start, std::string("unexpected char '") + c + "'");
        if (c == '(' || c == '[' || c == '{') ++depth;
        if (c == ')' || c == ']' || c == '}') {
            if (depth == 0) fail(start, std::string("unexpected '") + c + "'");
            --depth;
        }
        out_.push_back({TokenType::Operator, std::string(1, c), start});
        ++pos_;
    }

    void number() {
        const std::size_t start = pos_;
        auto digits = [&] {
            while (pos_ < src_.size() &&
                   (std::isdigit(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_'))
                ++pos_;
        };
        digits();
        bool is_float = false;
        if (pos_ + 1 < src_.size() && src_[pos_] == '.' &&
            std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
            is_float = true;
            ++pos_;
            digits();
        }
        if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
            std::size_t p = pos_ + 1;
            if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
            if (p < src_.size() && std::isdigit(static_cast<unsigned char>(src_[p]))) {
                is_float = true;
                pos_ = p;
                digits();
            }
        }
        std::string text;
        for (char ch : src_.substr(start, pos_ - start))
            if (ch != '_') text += ch;
        out_.push_back({is_float ? TokenType::Float : TokenType::Integer, text, start});
    }

    // Python string-literal escapes (Jinja2 unescapes literals the way Python does).
    void string_literal() {
        const std::size_t start = pos_;
        const char quote = src_[pos_++];
        std::string value;
        while (true) {
            if (pos_ >= src_.size()) fail(start, "unterminated string");
            const char c = src_[pos_++];
            if (c == quote) break;
            if (c != '\\') {
                value += c;
                continue;
            }
            if (pos_ >= src_.size()) fail(start, "unterminated string");
            const char e = src_[pos_++];
            switch (e) {
                case 'n':
                    value += '\n';
                    break;
                case 't':
                    value += '\t';
                    break;
                case 'r':
                    value += '\r';
                    break;
                case '0':
                    value += '\0';
                    break;
                case 'a':
                    value += '\a';
                    break;
                case 'b':
                    value += '\b';
                    break;
                case 'f':
                    value += '\f';
                    break;
                case 'v':
                    value += '\v';
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
                case '\n':
                    break;  // line continuation
                case 'x':
                case 'u':
                case 'U': {
                    const std::size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                    if (pos_ + n > src_.size())
                        fail(start, "truncated \\" + std::string(1, e) + " escape");
                    char32_t cp = 0;
                    for (std::size_t i = 0; i < n; ++i) {
                        const char h = src_[pos_ + i];
                        if (!std::isxdigit(static_cast<unsigned char>(h)))
                            fail(start, "bad \\" + std::string(1, e) + " escape");
                        cp = cp * 16 +
                             static_cast<char32_t>(std::isdigit(static_cast<unsigned char>(h))
                                                       ? h - '0'
                                                       : (std::tolower(h) - 'a' + 10));
                    }
                    pos_ += n;
                    if (cp > 0x10FFFF) fail(start, "escape beyond U+10FFFF");
                    utf8::append(value, cp);
                    break;
                }
                default:  // Python keeps unknown escapes as written
                    value += '\\';
                    value += e;
            }
        }
        out_.push_back({TokenType::String, std::move(value), start});
    }

    std::string_view src_;
    std::size_t pos_ = 0;
    bool line_starting_ = true;
    std::vector<Token> out_;
};

}  // namespace

std::string normalize_source(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (std::size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

std::string position(std::string_view src, std::size_t offset) {
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < offset && i < src.size(); ++i) {
        if (src[i] == '\n') {
            ++line;
            col = 1;
        } else {
            ++col;
        }
    }
    return std::to_string(line) + ":" + std::to_string(col);
}

std::vector<Token> tokenize(std::string_view normalized_source) {
    return Lexer(normalized_source).run();
}

}  // namespace fluoro::jinja
