#include "gguf/value_reader.h"

#include <algorithm>
#include <bit>
#include <string>
#include <vector>

#include "gguf/utf8.h"

namespace fluoro::gguf {
namespace {

constexpr uint32_t kMaxValueType = static_cast<uint32_t>(ValueType::F64);

std::string key_text(std::string_view key) {
    return "key '" + std::string(key) + "'";
}

// Bytes one element of `t` takes on disk (the length field alone for strings).
uint64_t min_size(ValueType t) {
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
            return 8;  // U64, I64, F64, String (length), Array (never an element)
    }
}

int64_t sign_extend(uint64_t v, unsigned bits) {
    const unsigned shift = 64 - bits;
    return static_cast<int64_t>(v << shift) >> shift;
}

uint64_t read_raw(ByteCursor& c, ValueType t) {
    switch (min_size(t)) {
        case 1:
            return c.u8("a 1-byte value");
        case 2:
            return c.u16("a 2-byte value");
        case 4:
            return c.u32("a 4-byte value");
        default:
            return c.u64("an 8-byte value");
    }
}

uint64_t read_unsigned(ByteCursor& c, ValueType t) {
    return read_raw(c, t);
}
int64_t read_signed(ByteCursor& c, ValueType t) {
    return sign_extend(read_raw(c, t), static_cast<unsigned>(8 * min_size(t)));
}
double read_float(ByteCursor& c, ValueType t) {
    if (t == ValueType::F32) return std::bit_cast<float>(c.u32("an f32 value"));
    return std::bit_cast<double>(c.u64("an f64 value"));
}
bool read_bool(ByteCursor& c) {
    return c.u8("a bool value") != 0;
}

bool is_signed(ValueType t) {
    return t == ValueType::I8 || t == ValueType::I16 || t == ValueType::I32 || t == ValueType::I64;
}

std::string read_string_value(ByteCursor& c, std::string_view what) {
    return std::string(read_utf8(c, what));
}

// The string at `index` of the array `key`; the element's name is built only for errors.
std::string read_string_element(ByteCursor& c, std::string_view key, uint64_t index) {
    const uint64_t at = c.pos();
    if (!c.string_fits()) c.string("element " + std::to_string(index) + " of " + key_text(key));
    const std::string_view s = c.string("a string element");
    if (const auto bad = find_invalid_utf8(s)) {
        c.fail(at + 8 + *bad,
               "element " + std::to_string(index) + " of " + key_text(key) +
                   " is not valid UTF-8 (bad byte at index " + std::to_string(*bad) + ")",
               "UTF-8 text");
    }
    return std::string(s);
}

template <typename T, typename ReadOne>
std::vector<T> read_elements(uint64_t count, ReadOne read_one) {
    std::vector<T> out;
    out.reserve(static_cast<size_t>(count));  // count was checked against the bytes left
    for (uint64_t i = 0; i < count; ++i) out.push_back(read_one(i));
    return out;
}

ValueType checked_type(ByteCursor& c, uint32_t raw, uint64_t at, std::string_view key,
                       std::string_view role) {
    if (raw > kMaxValueType) {
        c.fail(at, key_text(key) + " has unknown " + std::string(role) + " " + std::to_string(raw),
               "a GGUF value type 0..12");
    }
    return static_cast<ValueType>(raw);
}

Value read_array(ByteCursor& c, std::string_view key) {
    const uint64_t type_at = c.pos();
    const ValueType elem =
        checked_type(c, c.u32("an array element type"), type_at, key, "array element type");
    if (elem == ValueType::Array) {
        c.fail(type_at, key_text(key) + " is an array of arrays",
               "an array of scalars or strings (nested arrays are not supported)");
    }
    const uint64_t count_at = c.pos();
    const uint64_t n = c.u64("an array length");
    c.check_count(count_at, n, min_size(elem), "array length of " + key_text(key));
    using V = Value::Storage;
    V storage;
    if (elem == ValueType::String)
        storage = read_elements<std::string>(
            n, [&](uint64_t i) { return read_string_element(c, key, i); });
    else if (elem == ValueType::Bool)
        storage = read_elements<bool>(n, [&](uint64_t) { return read_bool(c); });
    else if (elem == ValueType::F32 || elem == ValueType::F64)
        storage = read_elements<double>(n, [&](uint64_t) { return read_float(c, elem); });
    else if (is_signed(elem))
        storage = read_elements<int64_t>(n, [&](uint64_t) { return read_signed(c, elem); });
    else
        storage = read_elements<uint64_t>(n, [&](uint64_t) { return read_unsigned(c, elem); });
    return Value(ValueType::Array, elem, std::move(storage));
}

Value read_scalar(ByteCursor& c, ValueType t, std::string_view key) {
    if (t == ValueType::String)
        return Value(t, t, read_string_value(c, "the value of " + key_text(key)));
    if (t == ValueType::Bool) return Value(t, t, read_bool(c));
    if (t == ValueType::F32 || t == ValueType::F64) return Value(t, t, read_float(c, t));
    if (is_signed(t)) return Value(t, t, read_signed(c, t));
    return Value(t, t, read_unsigned(c, t));
}

}  // namespace

std::string_view read_utf8(ByteCursor& c, std::string_view what) {
    const uint64_t at = c.pos();
    const std::string_view s = c.string(what);
    if (const auto bad = find_invalid_utf8(s)) {
        c.fail(at + 8 + *bad,
               std::string(what) + " is not valid UTF-8 (bad byte at index " +
                   std::to_string(*bad) + ")",
               "UTF-8 text");
    }
    return s;
}

Value read_value(ByteCursor& c, uint32_t raw_type, uint64_t type_at, std::string_view key) {
    const ValueType t = checked_type(c, raw_type, type_at, key, "value type");
    return t == ValueType::Array ? read_array(c, key) : read_scalar(c, t, key);
}

}  // namespace fluoro::gguf
