#include "sampling/json_prefix.h"

namespace fluoro {
namespace {

bool is_ws(uint8_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
bool is_digit(uint8_t c) {
    return c >= '0' && c <= '9';
}
bool is_hex(uint8_t c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

constexpr std::string_view kLiterals[] = {"true", "false", "null"};

}  // namespace

bool JsonPrefix::feed(uint8_t c) {
    const JsonPrefix saved = *this;
    if (step(c)) return true;
    *this = saved;
    return false;
}

bool JsonPrefix::feed(std::string_view bytes) {
    for (const char c : bytes)
        if (!feed(uint8_t(c))) return false;
    return true;
}

bool JsonPrefix::whitespace() {
    return ++spaces_ <= kMaxWhitespace;
}

bool JsonPrefix::end_value() {
    mode_ = depth_ == 0 ? Mode::Done : Mode::AfterValue;
    return true;
}

bool JsonPrefix::after_number(uint8_t c) {
    mode_ = Mode::AfterValue;  // numbers only occur inside a container (the top level is {...})
    return step(c);
}

bool JsonPrefix::start_value(uint8_t c) {
    switch (c) {
        case '{':
        case '[':
            if (depth_ == kMaxDepth) return false;
            stack_[depth_++] = c;
            mode_ = c == '{' ? Mode::KeyFirst : Mode::ArrayFirst;
            return true;
        case '"':
            key_ = false;
            mode_ = Mode::String;
            return true;
        case '-':
            mode_ = Mode::Minus;
            return true;
        case '0':
            mode_ = Mode::Zero;
            return true;
        case 't':
        case 'f':
        case 'n':
            literal_ = c == 't' ? 0 : c == 'f' ? 1 : 2;
            literal_at_ = 1;
            mode_ = Mode::Literal;
            return true;
        default:
            if (c >= '1' && c <= '9') {
                mode_ = Mode::Int;
                return true;
            }
            return false;
    }
}

bool JsonPrefix::step(uint8_t c) {
    const bool in_string = mode_ == Mode::String || mode_ == Mode::Escape || mode_ == Mode::Unicode;
    if (in_string || !is_ws(c)) spaces_ = 0;
    switch (mode_) {
        case Mode::Start:
            if (is_ws(c)) return whitespace();
            if (c != '{') return false;
            return start_value(c);
        case Mode::Done:
            return is_ws(c) && whitespace();
        case Mode::Value:
            if (is_ws(c)) return whitespace();
            return start_value(c);
        case Mode::ArrayFirst:
            if (is_ws(c)) return whitespace();
            if (c == ']') {
                --depth_;
                return end_value();
            }
            return start_value(c);
        case Mode::KeyFirst:
        case Mode::Key:
            if (is_ws(c)) return whitespace();
            if (c == '}' && mode_ == Mode::KeyFirst) {
                --depth_;
                return end_value();
            }
            if (c != '"') return false;
            key_ = true;
            mode_ = Mode::String;
            return true;
        case Mode::Colon:
            if (is_ws(c)) return whitespace();
            if (c != ':') return false;
            mode_ = Mode::Value;
            return true;
        case Mode::AfterValue: {
            if (is_ws(c)) return whitespace();
            const uint8_t open = stack_[depth_ - 1];
            if (c == ',') {
                mode_ = open == '{' ? Mode::Key : Mode::Value;
                return true;
            }
            if ((c == '}' && open == '{') || (c == ']' && open == '[')) {
                --depth_;
                return end_value();
            }
            return false;
        }
        case Mode::String:
            if (c == '"') {
                if (!key_) return end_value();
                key_ = false;
                mode_ = Mode::Colon;
                return true;
            }
            if (c == '\\') {
                mode_ = Mode::Escape;
                return true;
            }
            return c >= 0x20;  // raw control characters must be escaped
        case Mode::Escape:
            if (c == 'u') {
                hex_left_ = 4;
                mode_ = Mode::Unicode;
                return true;
            }
            if (std::string_view("\"\\/bfnrt").find(char(c)) == std::string_view::npos)
                return false;
            mode_ = Mode::String;
            return true;
        case Mode::Unicode:
            if (!is_hex(c)) return false;
            if (--hex_left_ == 0) mode_ = Mode::String;
            return true;
        case Mode::Minus:
            if (c == '0') {
                mode_ = Mode::Zero;
                return true;
            }
            if (!is_digit(c)) return false;
            mode_ = Mode::Int;
            return true;
        case Mode::Zero:
        case Mode::Int:
            if (is_digit(c)) return mode_ == Mode::Int;  // no leading zeros
            if (c == '.') {
                mode_ = Mode::Dot;
                return true;
            }
            if (c == 'e' || c == 'E') {
                mode_ = Mode::Exp;
                return true;
            }
            return after_number(c);
        case Mode::Dot:
            if (!is_digit(c)) return false;
            mode_ = Mode::Frac;
            return true;
        case Mode::Frac:
            if (is_digit(c)) return true;
            if (c == 'e' || c == 'E') {
                mode_ = Mode::Exp;
                return true;
            }
            return after_number(c);
        case Mode::Exp:
            if (c == '+' || c == '-') {
                mode_ = Mode::ExpSign;
                return true;
            }
            if (!is_digit(c)) return false;
            mode_ = Mode::ExpDigits;
            return true;
        case Mode::ExpSign:
            if (!is_digit(c)) return false;
            mode_ = Mode::ExpDigits;
            return true;
        case Mode::ExpDigits:
            if (is_digit(c)) return true;
            return after_number(c);
        case Mode::Literal: {
            const std::string_view lit = kLiterals[literal_];
            if (c != uint8_t(lit[literal_at_])) return false;
            if (++literal_at_ == lit.size()) return end_value();
            return true;
        }
    }
    return false;
}

}  // namespace fluoro
