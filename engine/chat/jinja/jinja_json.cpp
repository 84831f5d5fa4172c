#include "chat/jinja/jinja_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat/jinja/jinja_error.h"
#include "chat/jinja/jinja_utf8.h"

namespace fluoro::jinja {
namespace {

constexpr int kMaxNesting = 400;  // Python's json raises RecursionError on deep values too

struct Writer {
    const JsonOptions& opt;
    std::string item_sep;
    std::string key_sep;
    std::string out;

    void newline(int level) {
        out += '\n';
        for (int i = 0; i < level; ++i) out += *opt.indent;
    }

    void string(std::string_view s) {
        out += '"';
        for (char32_t cp : utf8::decode(s)) {
            switch (cp) {
                case '"':
                    out += "\\\"";
                    continue;
                case '\\':
                    out += "\\\\";
                    continue;
                case '\n':
                    out += "\\n";
                    continue;
                case '\r':
                    out += "\\r";
                    continue;
                case '\t':
                    out += "\\t";
                    continue;
                case '\b':
                    out += "\\b";
                    continue;
                case '\f':
                    out += "\\f";
                    continue;
                default:
                    break;
            }
            char buf[16];
            if (cp < 0x20 || (opt.ensure_ascii && cp > 0x7E)) {
                if (cp >= 0x10000) {  // a surrogate pair, as Python writes it
                    const char32_t v = cp - 0x10000;
                    std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x",
                                  0xD800u + static_cast<unsigned>(v >> 10),
                                  0xDC00u + static_cast<unsigned>(v & 0x3FF));
                } else {
                    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
                }
                out += buf;
            } else {
                utf8::append(out, cp);
            }
        }
        out += '"';
    }

    // Python's json turns non-string keys into strings: 1 -> "1", True -> "true", None -> "null".
    std::string key_text(const Value& k) {
        if (k.is_string()) return k.as_string();
        if (k.is_bool()) return k.as_bool() ? "true" : "false";
        if (k.is_none()) return "null";
        if (k.is_int()) return std::to_string(k.as_int());
        if (k.is_float()) return format_float(k.as_double());
        throw TemplateRuntimeError("keys must be str, int, float, bool or None, not " +
                                   k.type_name());
    }

    void value(const Value& v, int level) {
        if (level > kMaxNesting) throw TemplateRuntimeError("value too deeply nested for tojson");
        switch (v.kind()) {
            case Value::Kind::None:
                out += "null";
                return;
            case Value::Kind::Bool:
                out += v.as_bool() ? "true" : "false";
                return;
            case Value::Kind::Int:
                out += std::to_string(v.as_int());
                return;
            case Value::Kind::Float: {
                const double f = v.as_double();
                if (std::isnan(f))
                    out += "NaN";
                else if (std::isinf(f))
                    out += f > 0 ? "Infinity" : "-Infinity";
                else
                    out += format_float(f);
                return;
            }
            case Value::Kind::String:
                string(v.as_string());
                return;
            case Value::Kind::List: {
                if (v.is_iterator()) break;
                if (v.items().empty()) {
                    out += "[]";
                    return;
                }
                out += '[';
                bool first = true;
                for (const auto& item : v.items()) {
                    if (!first) out += item_sep;
                    first = false;
                    if (opt.indent) newline(level + 1);
                    value(item, level + 1);
                }
                if (opt.indent) newline(level);
                out += ']';
                return;
            }
            case Value::Kind::Dict: {
                if (v.is_namespace()) break;
                std::vector<std::pair<std::string, const Value*>> entries;
                for (const auto& [k, val] : v.dict_data().entries)
                    entries.emplace_back(key_text(k), &val);
                if (opt.sort_keys)
                    std::stable_sort(
                        entries.begin(), entries.end(),
                        [](const auto& a, const auto& b) { return a.first < b.first; });
                if (entries.empty()) {
                    out += "{}";
                    return;
                }
                out += '{';
                bool first = true;
                for (const auto& [k, val] : entries) {
                    if (!first) out += item_sep;
                    first = false;
                    if (opt.indent) newline(level + 1);
                    string(k);
                    out += key_sep;
                    value(*val, level + 1);
                }
                if (opt.indent) newline(level);
                out += '}';
                return;
            }
            default:
                break;
        }
        throw TemplateRuntimeError("Object of type " + v.type_name() + " is not JSON serializable");
    }
};

}  // namespace

std::string to_json(const Value& v, const JsonOptions& options) {
    Writer w{options,
             options.item_separator.value_or(options.indent ? "," : ", "),
             options.key_separator.value_or(": "),
             {}};
    w.value(v, 0);
    return std::move(w.out);
}

}  // namespace fluoro::jinja
