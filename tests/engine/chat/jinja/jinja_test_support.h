// Helpers for the Jinja tests: a context from JSON text, and one-call parse + render.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "chat/jinja/jinja_template.h"

namespace fluoro::jinja::test {

inline Value from_json(const nlohmann::ordered_json& j) {
    using T = nlohmann::ordered_json::value_t;
    switch (j.type()) {
        case T::null:
            return Value::none();
        case T::boolean:
            return Value(j.get<bool>());
        case T::number_integer:
        case T::number_unsigned:
            return Value(j.get<std::int64_t>());
        case T::number_float:
            return Value(j.get<double>());
        case T::string:
            return Value(j.get<std::string>());
        case T::array: {
            std::vector<Value> items;
            for (const auto& x : j) items.push_back(from_json(x));
            return Value::list(std::move(items));
        }
        case T::object: {
            Value d = Value::dict();
            for (const auto& [k, v] : j.items()) d.dict_data_mut().set(Value(k), from_json(v));
            return d;
        }
        default:
            return Value();
    }
}

// strftime_now() sees 2025-07-26 12:00:00 UTC, the instant jinja_compare.py gives jinja2.
inline constexpr std::time_t kFixedNow = 1753531200;

inline std::string render(std::string_view tmpl, std::string_view context_json = "{}",
                          RenderOptions options = {}) {
    options.now = kFixedNow;
    return Template::parse(tmpl).render(from_json(nlohmann::ordered_json::parse(context_json)),
                                        options);
}

}  // namespace fluoro::jinja::test
