#include "chat/json_to_jinja.h"

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "chat/json_span.h"
#include "core/error.h"

namespace fluoro {
namespace {

jinja::Value convert(std::string_view v) {
    using jinja::Value;
    // v is a valid JSON value's raw text (checked once by the caller), trimmed.
    switch (v.front()) {
        case '{': {
            Value d = Value::dict();
            const auto members = json_object_members(v);  // kept alive through the loop
            for (const auto& [k, raw] : *members) d.dict_data_mut().set(Value(k), convert(raw));
            return d;
        }
        case '[': {
            std::vector<Value> items;
            const auto elements = json_array_elements(v);
            for (std::string_view raw : *elements) items.push_back(convert(raw));
            return Value::list(std::move(items));
        }
        case '"':
            return Value(*json_string_value(v));
        case 't':
            return Value(true);
        case 'f':
            return Value(false);
        case 'n':
            return Value::none();
        default:
            break;
    }
    if (v.find_first_of(".eE") == v.npos) {
        std::int64_t i = 0;
        const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), i);
        if (ec == std::errc() && p == v.data() + v.size()) return Value(i);
        // Beyond int64 (Python keeps a big int): the nearest double is the closest we have.
    }
    // strtod, like Python, gives inf for a value beyond double range (stod would throw).
    return Value(std::strtod(std::string(v).c_str(), nullptr));
}

}  // namespace

jinja::Value json_to_jinja(std::string_view json_text, std::string_view what) {
    const auto end = json_value_end(json_text);
    if (!end || !is_json_value(json_text))
        throw Error(std::string(what) +
                    " is not valid JSON: " + std::string(json_text.substr(0, 80)));
    std::size_t b = json_text.find_first_not_of(" \t\r\n");
    return convert(json_text.substr(b, *end - b));
}

}  // namespace fluoro
