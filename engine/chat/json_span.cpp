#include "chat/json_span.h"

#include "chat/jinja/jinja_utf8.h"

#include <cstdint>

namespace fluoro {
namespace {

constexpr int kMaxDepth = 512;

bool is_ws(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::size_t skip_ws(std::string_view s, std::size_t i) {
    while (i < s.size() && is_ws(s[i])) ++i;
    return i;
}

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// End of the string literal opening at s[i] == '"'.
std::optional<std::size_t> string_end(std::string_view s, std::size_t i) {
    for (++i; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '"') return i + 1;
        if (static_cast<unsigned char>(c) < 0x20) return std::nullopt;
        if (c != '\\') continue;
        if (++i >= s.size()) return std::nullopt;
        switch (s[i]) {
            case '"':
            case '\\':
            case '/':
            case 'b':
            case 'f':
            case 'n':
            case 'r':
            case 't':
                break;
            case 'u':
                if (i + 4 >= s.size()) return std::nullopt;
                for (int k = 1; k <= 4; ++k)
                    if (hex_digit(s[i + k]) < 0) return std::nullopt;
                i += 4;
                break;
            default:
                return std::nullopt;
        }
    }
    return std::nullopt;
}

std::optional<std::size_t> number_end(std::string_view s, std::size_t i) {
    if (i < s.size() && s[i] == '-') ++i;
    if (i >= s.size() || !is_digit(s[i])) return std::nullopt;
    if (s[i] == '0') {
        ++i;
    } else {
        while (i < s.size() && is_digit(s[i])) ++i;
    }
    if (i < s.size() && s[i] == '.') {
        ++i;
        if (i >= s.size() || !is_digit(s[i])) return std::nullopt;
        while (i < s.size() && is_digit(s[i])) ++i;
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
        if (i >= s.size() || !is_digit(s[i])) return std::nullopt;
        while (i < s.size() && is_digit(s[i])) ++i;
    }
    return i;
}

std::optional<std::size_t> value_end(std::string_view s, std::size_t i, int depth) {
    if (depth > kMaxDepth) return std::nullopt;
    i = skip_ws(s, i);
    if (i >= s.size()) return std::nullopt;
    const char c = s[i];
    if (c == '"') return string_end(s, i);
    if (c == '-' || is_digit(c)) return number_end(s, i);
    for (std::string_view lit : {"true", "false", "null"})
        if (s.substr(i, lit.size()) == lit) return i + lit.size();
    if (c != '{' && c != '[') return std::nullopt;
    const char close = c == '{' ? '}' : ']';
    i = skip_ws(s, i + 1);
    if (i < s.size() && s[i] == close) return i + 1;
    for (;;) {
        if (c == '{') {
            i = skip_ws(s, i);
            if (i >= s.size() || s[i] != '"') return std::nullopt;
            const auto k = string_end(s, i);
            if (!k) return std::nullopt;
            i = skip_ws(s, *k);
            if (i >= s.size() || s[i] != ':') return std::nullopt;
            ++i;
        }
        const auto v = value_end(s, i, depth + 1);
        if (!v) return std::nullopt;
        i = skip_ws(s, *v);
        if (i >= s.size()) return std::nullopt;
        if (s[i] == close) return i + 1;
        if (s[i] != ',') return std::nullopt;
        ++i;
    }
}

std::string_view trim(std::string_view s) {
    std::size_t b = skip_ws(s, 0), e = s.size();
    while (e > b && is_ws(s[e - 1])) --e;
    return s.substr(b, e - b);
}

}  // namespace

std::optional<std::size_t> json_value_end(std::string_view text, std::size_t pos) {
    return value_end(text, pos, 0);
}

bool is_json_value(std::string_view text) {
    const auto end = json_value_end(text);
    return end && skip_ws(text, *end) == text.size();
}

std::optional<std::string> json_string_value(std::string_view literal) {
    literal = trim(literal);
    if (literal.empty() || literal[0] != '"' || string_end(literal, 0) != literal.size())
        return std::nullopt;
    std::string out;
    for (std::size_t i = 1; i + 1 < literal.size(); ++i) {
        const char c = literal[i];
        if (c != '\\') {
            out += c;
            continue;
        }
        const char e = literal[++i];
        switch (e) {
            case 'b':
                out += '\b';
                break;
            case 'f':
                out += '\f';
                break;
            case 'n':
                out += '\n';
                break;
            case 'r':
                out += '\r';
                break;
            case 't':
                out += '\t';
                break;
            case 'u': {
                auto read4 = [&](std::size_t at) {
                    std::uint32_t v = 0;
                    for (int k = 0; k < 4; ++k) v = v * 16 + hex_digit(literal[at + k]);
                    return v;
                };
                std::uint32_t cp = read4(i + 1);
                i += 4;
                // A high surrogate followed by \uDC00-\uDFFF is one code point; a lone surrogate
                // becomes U+FFFD (Python keeps it, but it cannot be UTF-8).
                if (cp >= 0xD800 && cp < 0xDC00 && i + 6 < literal.size() &&
                    literal[i + 1] == '\\' && literal[i + 2] == 'u') {
                    const std::uint32_t lo = read4(i + 3);
                    if (lo >= 0xDC00 && lo < 0xE000) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        i += 6;
                    }
                }
                if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD;
                jinja::utf8::append(out, char32_t(cp));
                break;
            }
            default:
                out += e;
                break;  // " \ /
        }
    }
    return out;
}

std::optional<std::vector<std::pair<std::string, std::string_view>>> json_object_members(
    std::string_view object_text) {
    const std::string_view s = trim(object_text);
    if (s.empty() || s[0] != '{' || !is_json_value(s)) return std::nullopt;
    std::vector<std::pair<std::string, std::string_view>> out;
    std::size_t i = skip_ws(s, 1);
    if (s[i] == '}') return out;
    for (;;) {
        i = skip_ws(s, i);
        const std::size_t key_end = *string_end(s, i);
        std::string key = *json_string_value(s.substr(i, key_end - i));
        i = skip_ws(s, key_end) + 1;  // past ':'
        const std::size_t vb = skip_ws(s, i);
        const std::size_t ve = *json_value_end(s, vb);
        out.emplace_back(std::move(key), s.substr(vb, ve - vb));
        i = skip_ws(s, ve);
        if (s[i] == '}') return out;
        ++i;  // ','
    }
}

std::optional<std::vector<std::string_view>> json_array_elements(std::string_view array_text) {
    const std::string_view s = trim(array_text);
    if (s.empty() || s[0] != '[' || !is_json_value(s)) return std::nullopt;
    std::vector<std::string_view> out;
    std::size_t i = skip_ws(s, 1);
    if (s[i] == ']') return out;
    for (;;) {
        const std::size_t vb = skip_ws(s, i);
        const std::size_t ve = *json_value_end(s, vb);
        out.push_back(s.substr(vb, ve - vb));
        i = skip_ws(s, ve);
        if (s[i] == ']') return out;
        ++i;
    }
}

}  // namespace fluoro
