#include "gguf/value_writer.h"

#include <bit>
#include <string>
#include <variant>

#include "core/error.h"

namespace fluoro::gguf {
namespace {

unsigned width(ValueType t) {
    switch (t) {
        case ValueType::U8:
        case ValueType::I8:
        case ValueType::Bool:
            return 1;
        case ValueType::U16:
        case ValueType::I16:
            return 2;
        case ValueType::U32:
        case ValueType::I32:
        case ValueType::F32:
            return 4;
        default:
            return 8;
    }
}

bool is_unsigned(ValueType t) {
    return t == ValueType::U8 || t == ValueType::U16 || t == ValueType::U32 || t == ValueType::U64;
}
bool is_signed(ValueType t) {
    return t == ValueType::I8 || t == ValueType::I16 || t == ValueType::I32 || t == ValueType::I64;
}
bool is_float(ValueType t) {
    return t == ValueType::F32 || t == ValueType::F64;
}

[[noreturn]] void bad_value(std::string_view key, std::string_view what) {
    throw Error("GgufWriter: key '" + std::string(key) + "': " + std::string(what));
}

void check_element(std::string_view key, ValueType t, uint64_t v) {
    if (!is_unsigned(t)) bad_value(key, "unsigned storage for a non-unsigned type");
    if (width(t) < 8 && v >> (8 * width(t)) != 0) bad_value(key, "value too wide for its type");
}
void check_element(std::string_view key, ValueType t, int64_t v) {
    if (!is_signed(t)) bad_value(key, "signed storage for a non-signed type");
    const unsigned bits = 8 * width(t);
    if (bits < 64 && (v < -(int64_t{1} << (bits - 1)) || v >= (int64_t{1} << (bits - 1))))
        bad_value(key, "value too wide for its type");
}
void check_element(std::string_view key, ValueType t, double) {
    if (!is_float(t)) bad_value(key, "float storage for a non-float type");
}
void check_element(std::string_view key, ValueType t, bool) {
    if (t != ValueType::Bool) bad_value(key, "bool storage for a non-bool type");
}
void check_element(std::string_view key, ValueType t, const std::string&) {
    if (t != ValueType::String) bad_value(key, "string storage for a non-string type");
}

void write_element(ByteSink& out, ValueType t, uint64_t v) {
    out.le(v, width(t));
}
void write_element(ByteSink& out, ValueType t, int64_t v) {
    out.le(static_cast<uint64_t>(v), width(t));
}
void write_element(ByteSink& out, ValueType t, double v) {
    if (t == ValueType::F32)
        out.u32(std::bit_cast<uint32_t>(static_cast<float>(v)));
    else
        out.u64(std::bit_cast<uint64_t>(v));
}
void write_element(ByteSink& out, ValueType, bool v) {
    out.le(v ? 1 : 0, 1);
}
void write_element(ByteSink& out, ValueType, const std::string& v) {
    out.string(v);
}

}  // namespace

void check_value(std::string_view key, const Value& v) {
    if (static_cast<uint32_t>(v.type()) > static_cast<uint32_t>(ValueType::F64))
        bad_value(key, "unknown value type");
    const bool array = v.is_array();
    if (array && (v.elem_type() == ValueType::Array ||
                  static_cast<uint32_t>(v.elem_type()) > static_cast<uint32_t>(ValueType::F64)))
        bad_value(key, "arrays hold scalars or strings");
    const ValueType t = array ? v.elem_type() : v.type();
    std::visit(
        [&](const auto& s) {
            using S = std::decay_t<decltype(s)>;
            if constexpr (std::is_same_v<S, std::string> || !requires { s.size(); }) {
                if (array) bad_value(key, "scalar storage for an array");
                check_element(key, t, s);
            } else {
                if (!array) bad_value(key, "array storage for a scalar");
                for (size_t i = 0; i < s.size(); ++i)
                    check_element(key, t, static_cast<typename S::value_type>(s[i]));
            }
        },
        v.storage());
}

void write_value(ByteSink& out, const Value& v) {
    out.u32(static_cast<uint32_t>(v.type()));
    if (v.is_array()) {
        out.u32(static_cast<uint32_t>(v.elem_type()));
        out.u64(v.array_size());
    }
    const ValueType t = v.is_array() ? v.elem_type() : v.type();
    std::visit(
        [&](const auto& s) {
            using S = std::decay_t<decltype(s)>;
            if constexpr (std::is_same_v<S, std::string> || !requires { s.size(); })
                write_element(out, t, s);
            else
                for (size_t i = 0; i < s.size(); ++i)
                    write_element(out, t, static_cast<typename S::value_type>(s[i]));
        },
        v.storage());
}

}  // namespace fluoro::gguf
