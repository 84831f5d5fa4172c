#include "chat/jinja/jinja_strings.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "chat/jinja/jinja_access.h"
#include "chat/jinja/jinja_error.h"
#include "chat/jinja/jinja_utf8.h"

namespace fluoro::jinja::py {
namespace {

char32_t to_upper(char32_t c) {
    return c >= 'a' && c <= 'z' ? c - 32 : c;
}
char32_t to_lower(char32_t c) {
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}
bool is_cased(char32_t c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

}  // namespace

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                  bool right) {
    auto cps = utf8::decode(s);
    std::vector<char32_t> set;
    if (chars) set = utf8::decode(*chars);
    auto strippable = [&](char32_t c) {
        if (!chars) return utf8::is_space(c);
        for (char32_t x : set)
            if (x == c) return true;
        return false;
    };
    std::size_t b = 0, e = cps.size();
    if (left)
        while (b < e && strippable(cps[b])) ++b;
    if (right)
        while (e > b && strippable(cps[e - 1])) --e;
    return utf8::encode(std::vector<char32_t>(cps.begin() + static_cast<std::ptrdiff_t>(b),
                                              cps.begin() + static_cast<std::ptrdiff_t>(e)));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep,
                               std::int64_t maxsplit, bool from_right) {
    std::vector<std::string> out;
    if (sep) {
        if (sep->empty()) throw TemplateRuntimeError("empty separator");
        if (!from_right) {
            std::size_t pos = 0;
            while (maxsplit < 0 || static_cast<std::int64_t>(out.size()) < maxsplit) {
                const auto f = s.find(*sep, pos);
                if (f == std::string_view::npos) break;
                out.emplace_back(s.substr(pos, f - pos));
                pos = f + sep->size();
            }
            out.emplace_back(s.substr(pos));
            return out;
        }
        std::size_t end = s.size();
        std::vector<std::string> rev;
        while (maxsplit < 0 || static_cast<std::int64_t>(rev.size()) < maxsplit) {
            if (end < sep->size()) break;
            const auto f = s.rfind(*sep, end - sep->size());
            if (f == std::string_view::npos) break;
            rev.emplace_back(s.substr(f + sep->size(), end - f - sep->size()));
            end = f;
        }
        rev.emplace_back(s.substr(0, end));
        return std::vector<std::string>(rev.rbegin(), rev.rend());
    }
    // Whitespace runs; leading/trailing whitespace yields no empty parts.
    auto cps = utf8::decode(s);
    if (from_right) {
        std::vector<std::string> rev;
        std::ptrdiff_t i = static_cast<std::ptrdiff_t>(cps.size()) - 1;
        while (true) {
            while (i >= 0 && utf8::is_space(cps[static_cast<std::size_t>(i)])) --i;
            if (i < 0) break;
            if (maxsplit >= 0 && static_cast<std::int64_t>(rev.size()) >= maxsplit) {
                rev.push_back(
                    utf8::encode(std::vector<char32_t>(cps.begin(), cps.begin() + i + 1)));
                break;
            }
            std::ptrdiff_t j = i;
            while (j >= 0 && !utf8::is_space(cps[static_cast<std::size_t>(j)])) --j;
            rev.push_back(
                utf8::encode(std::vector<char32_t>(cps.begin() + j + 1, cps.begin() + i + 1)));
            i = j;
        }
        return std::vector<std::string>(rev.rbegin(), rev.rend());
    }
    std::size_t i = 0;
    while (true) {
        while (i < cps.size() && utf8::is_space(cps[i])) ++i;
        if (i >= cps.size()) break;
        if (maxsplit >= 0 && static_cast<std::int64_t>(out.size()) >= maxsplit) {
            std::size_t e = cps.size();
            while (e > i && utf8::is_space(cps[e - 1])) --e;
            out.push_back(
                utf8::encode(std::vector<char32_t>(cps.begin() + static_cast<std::ptrdiff_t>(i),
                                                   cps.begin() + static_cast<std::ptrdiff_t>(e))));
            break;
        }
        std::size_t j = i;
        while (j < cps.size() && !utf8::is_space(cps[j])) ++j;
        out.push_back(
            utf8::encode(std::vector<char32_t>(cps.begin() + static_cast<std::ptrdiff_t>(i),
                                               cps.begin() + static_cast<std::ptrdiff_t>(j))));
        i = j;
    }
    return out;
}

std::vector<std::string> splitlines(std::string_view s) {
    std::vector<std::string> out;
    std::size_t start = 0, i = 0;
    while (i < s.size()) {
        const char c = s[i];
        if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e)) {
            out.emplace_back(s.substr(start, i - start));
            i += (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ? 2 : 1;
            start = i;
        } else {
            ++i;
        }
    }
    if (start < s.size()) out.emplace_back(s.substr(start));
    return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view with,
                    std::int64_t count) {
    std::string out;
    if (old.empty()) {  // Python inserts `with` around every character
        auto cps = utf8::decode(s);
        std::int64_t n = 0;
        for (std::size_t i = 0; i <= cps.size(); ++i) {
            if (count < 0 || n < count) {
                out += with;
                ++n;
            }
            if (i < cps.size()) utf8::append(out, cps[i]);
            check_size(out.size());
        }
        return out;
    }
    std::size_t pos = 0;
    std::int64_t n = 0;
    while (count < 0 || n < count) {
        const auto f = s.find(old, pos);
        if (f == std::string_view::npos) break;
        out.append(s.substr(pos, f - pos));
        out.append(with);
        check_size(out.size());
        pos = f + old.size();
        ++n;
    }
    out.append(s.substr(pos));
    return out;
}

std::string upper(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(to_upper(static_cast<unsigned char>(c)));
    return out;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(to_lower(static_cast<unsigned char>(c)));
    return out;
}

std::string title(std::string_view s) {
    std::string out;
    bool prev_cased = false;
    for (char32_t c : utf8::decode(s)) {
        if (is_cased(c)) {
            utf8::append(out, prev_cased ? to_lower(c) : to_upper(c));
            prev_cased = true;
        } else {
            utf8::append(out, c);
            prev_cased = false;
        }
    }
    return out;
}

std::string capitalize(std::string_view s) {
    std::string out;
    bool first = true;
    for (char32_t c : utf8::decode(s)) {
        utf8::append(out, first ? to_upper(c) : to_lower(c));
        first = false;
    }
    return out;
}

std::string format(std::string_view fmt, const CallArgs& args) {
    std::string out;
    std::size_t auto_index = 0;
    for (std::size_t i = 0; i < fmt.size(); ++i) {
        const char c = fmt[i];
        if (c == '}') {
            if (i + 1 < fmt.size() && fmt[i + 1] == '}')
                ++i;
            else
                throw TemplateRuntimeError("Single '}' encountered in format string");
            out += '}';
            continue;
        }
        if (c != '{') {
            out += c;
            continue;
        }
        if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
            out += '{';
            ++i;
            continue;
        }
        const auto close = fmt.find('}', i);
        if (close == std::string_view::npos)
            throw TemplateRuntimeError("Single '{' encountered in format string");
        std::string_view field = fmt.substr(i + 1, close - i - 1);
        if (field.find_first_of(":!.[") != std::string_view::npos)
            throw UnsupportedError("str.format field '{" + std::string(field) +
                                   "}' is not supported");
        const Value* v = nullptr;
        if (field.empty()) {
            v = auto_index < args.positional.size() ? &args.positional[auto_index] : nullptr;
            ++auto_index;
        } else if (std::isdigit(static_cast<unsigned char>(field[0]))) {
            const auto idx = static_cast<std::size_t>(std::atoll(std::string(field).c_str()));
            v = idx < args.positional.size() ? &args.positional[idx] : nullptr;
        } else {
            for (const auto& [k, val] : args.keyword)
                if (k == field) v = &val;
        }
        if (!v)
            throw TemplateRuntimeError("format field '{" + std::string(field) +
                                       "}' has no argument");
        out += v->str();
        check_size(out.size());
        i = close;
    }
    return out;
}

std::optional<std::int64_t> parse_int(std::string_view s, int base) {
    std::string t = strip(s, std::nullopt, true, true);
    std::string digits;
    bool neg = false;
    std::size_t i = 0;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) neg = t[i++] == '-';
    if (i >= t.size()) return std::nullopt;
    for (; i < t.size(); ++i) {
        if (t[i] == '_' && !digits.empty() && i + 1 < t.size() && t[i + 1] != '_') continue;
        if (!std::isalnum(static_cast<unsigned char>(t[i]))) return std::nullopt;
        digits += t[i];
    }
    if (digits.empty()) return std::nullopt;
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(digits.c_str(), &end, base);
    if (errno || *end) return std::nullopt;
    return neg ? -v : v;
}

std::optional<double> parse_float(std::string_view s) {
    std::string t = strip(s, std::nullopt, true, true);
    if (t.empty()) return std::nullopt;
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (*end) return std::nullopt;
    return v;
}

}  // namespace fluoro::jinja::py
