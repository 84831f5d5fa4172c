// fluoro_jinja_render TEMPLATE CONTEXT.json [--now EPOCH]: renders a chat template with the
// engine's Jinja interpreter and prints the text, for tests/tools/jinja_compare.py to hold
// against Python's jinja2. Exit 0: rendered; 1: the template raised (syntax or runtime error,
// raise_exception); 3: we refuse the template (a Jinja2 feature not implemented); 2: bad usage.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/jinja/jinja_template.h"

namespace {

using fluoro::jinja::Value;

// JSON to the interpreter's values; object key order is kept (ordered_json), as Python's dicts do.
Value to_value(const nlohmann::ordered_json& j) {
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null:
            return Value::none();
        case nlohmann::ordered_json::value_t::boolean:
            return Value(j.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer:
            return Value(j.get<std::int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            const auto u = j.get<std::uint64_t>();
            if (u > static_cast<std::uint64_t>(INT64_MAX))
                throw fluoro::UnsupportedError("integer exceeds 64 bits");
            return Value(static_cast<std::int64_t>(u));
        }
        case nlohmann::ordered_json::value_t::number_float:
            return Value(j.get<double>());
        case nlohmann::ordered_json::value_t::string:
            return Value(j.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            std::vector<Value> items;
            for (const auto& x : j) items.push_back(to_value(x));
            return Value::list(std::move(items));
        }
        case nlohmann::ordered_json::value_t::object: {
            Value d = Value::dict();
            for (const auto& [k, v] : j.items()) d.dict_data_mut().set(Value(k), to_value(v));
            return d;
        }
        default:
            return Value();
    }
}

std::string read_file(const char* path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "error: cannot read %s\n", path);
        std::exit(2);
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3 && argc != 5) {
        std::fprintf(stderr, "usage: fluoro_jinja_render TEMPLATE CONTEXT.json [--now EPOCH]\n");
        return 2;
    }
    fluoro::jinja::RenderOptions options;
    if (argc == 5) options.now = static_cast<std::time_t>(std::atoll(argv[4]));
    try {
        const auto context = to_value(nlohmann::ordered_json::parse(read_file(argv[2])));
        const auto tmpl = fluoro::jinja::Template::parse(read_file(argv[1]));
        std::cout << tmpl.render(context, options);
        return 0;
    } catch (const fluoro::UnsupportedError& e) {
        std::fprintf(stderr, "unsupported: %s\n", e.what());
        return 3;
    } catch (const nlohmann::json::exception& e) {
        std::fprintf(stderr, "error: bad context JSON: %s\n", e.what());
        return 2;
    } catch (const fluoro::Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
