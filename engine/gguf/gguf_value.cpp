#include "gguf/gguf_value.h"

#include <array>
#include <charconv>
#include <type_traits>

namespace fluoro::gguf {
namespace {

std::string number_text(double v, ValueType t) {
    std::array<char, 64> buf{};
    const auto r = t == ValueType::F32
                       ? std::to_chars(buf.data(), buf.data() + buf.size(), static_cast<float>(v))
                       : std::to_chars(buf.data(), buf.data() + buf.size(), v);
    return {buf.data(), r.ptr};
}

std::string hex_escape(char c) {
    constexpr std::string_view kDigits = "0123456789abcdef";
    const auto b = static_cast<unsigned char>(c);
    return {'\\', 'x', kDigits[b >> 4], kDigits[b & 15]};
}

// Cuts `s` to at most `max_bytes` without splitting a UTF-8 sequence.
std::string_view cut_utf8(std::string_view s, size_t max_bytes) {
    if (s.size() <= max_bytes) return s;
    size_t n = max_bytes;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    return s.substr(0, n);
}

// Quoted, one line: control characters are escaped so templates and newline tokens stay
// readable in a table.
std::string quoted(std::string_view s, size_t max_chars) {
    const std::string_view cut = cut_utf8(s, max_chars);
    std::string out = "\"";
    for (const char c : cut) {
        if (c == '\n')
            out += "\\n";
        else if (c == '\t')
            out += "\\t";
        else if (c == '\r')
            out += "\\r";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\\')
            out += "\\\\";
        else if (static_cast<unsigned char>(c) < 0x20)
            out += hex_escape(c);
        else
            out += c;
    }
    out += '"';
    if (cut.size() < s.size()) out += "...";
    return out;
}

std::string element_text(uint64_t v, ValueType) {
    return std::to_string(v);
}
std::string element_text(int64_t v, ValueType) {
    return std::to_string(v);
}
std::string element_text(double v, ValueType t) {
    return number_text(v, t);
}
std::string element_text(bool v, ValueType) {
    return v ? "true" : "false";
}
std::string element_text(const std::string& v, ValueType) {
    return quoted(v, 40);
}

template <typename Vec>
std::string array_text(const Vec& items, ValueType elem, size_t max_chars) {
    // Appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "[" + std::string.
    std::string out = "[";
    out.append(value_type_name(elem)).append(" x ").append(std::to_string(items.size()));
    out += ']';
    for (size_t i = 0; i < items.size(); ++i) {
        const std::string item =
            element_text(static_cast<typename Vec::value_type>(items[i]), elem);
        if (out.size() + item.size() + 2 > max_chars) {
            out += i == 0 ? " ..." : ", ...";
            break;
        }
        out += i == 0 ? " " : ", ";
        out += item;
    }
    return out;
}

}  // namespace

std::string_view value_type_name(ValueType t) {
    switch (t) {
        case ValueType::U8:
            return "u8";
        case ValueType::I8:
            return "i8";
        case ValueType::U16:
            return "u16";
        case ValueType::I16:
            return "i16";
        case ValueType::U32:
            return "u32";
        case ValueType::I32:
            return "i32";
        case ValueType::F32:
            return "f32";
        case ValueType::Bool:
            return "bool";
        case ValueType::String:
            return "string";
        case ValueType::Array:
            return "array";
        case ValueType::U64:
            return "u64";
        case ValueType::I64:
            return "i64";
        case ValueType::F64:
            return "f64";
    }
    return "unknown";
}

size_t Value::array_size() const {
    return std::visit(
        [](const auto& v) -> size_t {
            using T = std::decay_t<decltype(v)>;
            if constexpr (requires { v.size(); } && !std::is_same_v<T, std::string>)
                return v.size();
            else
                return 0;
        },
        storage_);
}

std::string Value::to_display(size_t max_chars) const {
    return std::visit(
        [&](const auto& v) -> std::string {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::string>)
                return quoted(v, max_chars);
            else if constexpr (requires { v.size(); })
                return array_text(v, elem_type_, max_chars);
            else
                return element_text(v, type_);
        },
        storage_);
}

}  // namespace fluoro::gguf
