// GgufFile: typed metadata getters. Integers of any width convert to each other when the value
// fits; floats accept any numeric type; errors name the key and where it is in the file.
#include <limits>

#include "core/error.h"
#include "gguf/byte_cursor.h"
#include "gguf/gguf_file.h"

namespace fluoro::gguf {
namespace {

std::string type_text(const Value& v) {
    if (!v.is_array()) return std::string(value_type_name(v.type()));
    return "array of " + std::string(value_type_name(v.elem_type()));
}

}  // namespace

void GgufFile::key_error(std::string_view key, std::string_view problem,
                         std::string_view expected) const {
    const auto it = kv_index_.find(key);
    const std::string what = "key '" + std::string(key) + "' " + std::string(problem);
    if (it == kv_index_.end())
        throw FormatError(name_ + ": " + what + "; expected " + std::string(expected));
    throw_format_error(name_, kv_at_[it->second], what, expected);
}

std::optional<uint64_t> GgufFile::get_uint(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (const auto* u = std::get_if<uint64_t>(&v->storage())) return *u;
    if (const auto* i = std::get_if<int64_t>(&v->storage())) {
        if (*i < 0)
            key_error(key, "is negative (" + std::to_string(*i) + ")", "an unsigned integer");
        return static_cast<uint64_t>(*i);
    }
    key_error(key, "has type " + type_text(*v), "an unsigned integer");
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (const auto* i = std::get_if<int64_t>(&v->storage())) return *i;
    if (const auto* u = std::get_if<uint64_t>(&v->storage())) {
        if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            key_error(key, "is " + std::to_string(*u) + ", too large for int64",
                      "a signed integer");
        return static_cast<int64_t>(*u);
    }
    key_error(key, "has type " + type_text(*v), "an integer");
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (const auto* d = std::get_if<double>(&v->storage())) return *d;
    if (const auto* u = std::get_if<uint64_t>(&v->storage())) return static_cast<double>(*u);
    if (const auto* i = std::get_if<int64_t>(&v->storage())) return static_cast<double>(*i);
    key_error(key, "has type " + type_text(*v), "a number");
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (const auto* b = std::get_if<bool>(&v->storage())) return *b;
    key_error(key, "has type " + type_text(*v), "a bool");
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (const auto* s = std::get_if<std::string>(&v->storage())) return *s;
    key_error(key, "has type " + type_text(*v), "a string");
}

uint64_t GgufFile::require_uint(std::string_view key) const {
    if (const auto v = get_uint(key)) return *v;
    key_error(key, "is missing", "an unsigned integer");
}

double GgufFile::require_float(std::string_view key) const {
    if (const auto v = get_float(key)) return *v;
    key_error(key, "is missing", "a number");
}

std::string GgufFile::require_string(std::string_view key) const {
    if (auto v = get_string(key)) return std::move(*v);
    key_error(key, "is missing", "a string");
}

std::optional<std::vector<uint64_t>> GgufFile::get_uint_per_layer(std::string_view key,
                                                                  size_t n_layers) const {
    const Value* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_array()) return std::vector<uint64_t>(n_layers, *get_uint(key));
    const std::string expected =
        "one unsigned integer per layer (" + std::to_string(n_layers) + ")";
    if (v->array_size() != n_layers)
        key_error(key, "has " + std::to_string(v->array_size()) + " entries", expected);
    if (const auto* u = std::get_if<std::vector<uint64_t>>(&v->storage())) return *u;
    const auto* i = std::get_if<std::vector<int64_t>>(&v->storage());
    if (!i) key_error(key, "has type " + type_text(*v), expected);
    std::vector<uint64_t> out(i->size());
    for (size_t k = 0; k < i->size(); ++k) {
        if ((*i)[k] < 0)
            key_error(
                key,
                "entry " + std::to_string(k) + " is negative (" + std::to_string((*i)[k]) + ")",
                expected);
        out[k] = static_cast<uint64_t>((*i)[k]);
    }
    return out;
}

}  // namespace fluoro::gguf
