#include "chat/jinja/jinja_json_parse.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace fluoro::jinja {

namespace {

void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}

class Reader {
  public:
    explicit Reader(std::string_view s) : s_(s) {}

    Value document() {
        Value v = value(0);
        space();
        if (i_ != s_.size()) fail("unexpected text after the value");
        return v;
    }

  private:
    [[noreturn]] void fail(const std::string& what) const {
        throw Error("JSON: " + what + " at byte " + std::to_string(i_));
    }
    void space() {
        while (i_ < s_.size() &&
               (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
            ++i_;
    }
    bool eat(char c) {
        space();
        if (i_ < s_.size() && s_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }
    void expect(char c) {
        if (!eat(c)) fail(std::string("expected '") + c + "'");
    }
    bool word(std::string_view w) {
        if (s_.substr(i_, w.size()) != w) return false;
        i_ += w.size();
        return true;
    }

    Value value(int depth) {
        if (depth > 256) fail("nesting deeper than 256");
        space();
        if (i_ >= s_.size()) fail("unexpected end of the text");
        const char c = s_[i_];
        if (c == '{') return object(depth);
        if (c == '[') return array(depth);
        if (c == '"') return Value(string());
        if (word("true")) return Value(true);
        if (word("false")) return Value(false);
        if (word("null")) return Value::none();
        if (c == '-' || (c >= '0' && c <= '9')) return number();
        fail("unexpected character");
    }

    Value object(int depth) {
        ++i_;  // {
        Value d = Value::dict();
        if (eat('}')) return d;
        do {
            space();
            if (i_ >= s_.size() || s_[i_] != '"') fail("expected a string key");
            std::string key = string();
            expect(':');
            d.dict_data_mut().set(Value(std::move(key)), value(depth + 1));
        } while (eat(','));
        expect('}');
        return d;
    }

    Value array(int depth) {
        ++i_;  // [
        std::vector<Value> items;
        if (eat(']')) return Value::list(std::move(items));
        do items.push_back(value(depth + 1));
        while (eat(','));
        expect(']');
        return Value::list(std::move(items));
    }

    unsigned hex4() {
        if (i_ + 4 > s_.size()) fail("truncated \\u escape");
        unsigned v = 0;
        for (int k = 0; k < 4; ++k) {
            const char h = s_[i_++];
            v <<= 4;
            if (h >= '0' && h <= '9')
                v |= unsigned(h - '0');
            else if (h >= 'a' && h <= 'f')
                v |= unsigned(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
                v |= unsigned(h - 'A' + 10);
            else
                fail("bad hex digit in a \\u escape");
        }
        return v;
    }

    std::string string() {
        ++i_;  // "
        std::string out;
        for (;;) {
            if (i_ >= s_.size()) fail("unterminated string");
            const char c = s_[i_++];
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
            if (c != '\\') {
                out += c;
                continue;
            }
            if (i_ >= s_.size()) fail("unterminated escape");
            switch (s_[i_++]) {
                case '"':
                    out += '"';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '/':
                    out += '/';
                    break;
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
                    char32_t cp = hex4();
                    if (cp >= 0xD800 && cp <= 0xDBFF && word("\\u")) {  // a surrogate pair
                        const char32_t lo = hex4();
                        if (lo < 0xDC00 || lo > 0xDFFF) fail("unpaired surrogate");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else if (cp >= 0xD800 && cp <= 0xDFFF) {
                        fail("unpaired surrogate");
                    }
                    append_utf8(out, cp);
                    break;
                }
                default:
                    fail("unknown escape");
            }
        }
    }

    Value number() {
        const size_t start = i_;
        if (s_[i_] == '-') ++i_;
        const auto digits = [&] {
            const size_t from = i_;
            while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
            return i_ > from;
        };
        if (!digits()) fail("expected digits");
        bool is_float = false;
        if (i_ < s_.size() && s_[i_] == '.') {
            ++i_;
            is_float = true;
            if (!digits()) fail("expected digits after '.'");
        }
        if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
            ++i_;
            is_float = true;
            if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
            if (!digits()) fail("expected an exponent");
        }
        const std::string text(s_.substr(start, i_ - start));
        if (!is_float) {
            errno = 0;
            char* end = nullptr;
            const long long v = std::strtoll(text.c_str(), &end, 10);
            if (errno != ERANGE) return Value(std::int64_t(v));
            // Python keeps big integers exact; a float is the closest this interpreter has.
        }
        const double d = std::strtod(text.c_str(), nullptr);
        if (!std::isfinite(d)) fail("number out of range");
        return Value(d);
    }

    std::string_view s_;
    size_t i_ = 0;
};

}  // namespace

Value parse_json(std::string_view text) {
    return Reader(text).document();
}

}  // namespace fluoro::jinja
