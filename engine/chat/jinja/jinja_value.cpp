#include "chat/jinja/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chat/jinja/jinja_error.h"
#include "chat/jinja/jinja_utf8.h"

namespace fluoro::jinja {
namespace {

constexpr int kMaxNesting = Value::kMaxNesting;

void check_depth(int depth) {
    if (depth > kMaxNesting)
        throw TemplateRuntimeError("value nested more than " + std::to_string(kMaxNesting) +
                                   " levels deep");
}

std::string repr_at(const Value& v, int depth);

std::string repr_items(const Value& v, int depth) {
    const std::string& view = v.list_data_view_name();
    std::string out = view.empty() ? (v.is_tuple() ? "(" : "[") : view + "([";
    const auto& items = v.items();
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        out += repr_at(items[i], depth + 1);
    }
    if (v.is_tuple() && items.size() == 1) out += ",";
    out += view.empty() ? (v.is_tuple() ? ")" : "]") : "])";
    return out;
}

std::string repr_dict(const DictData& d, int depth) {
    std::string out = "{";
    for (std::size_t i = 0; i < d.entries.size(); ++i) {
        if (i) out += ", ";
        out +=
            repr_at(d.entries[i].first, depth + 1) + ": " + repr_at(d.entries[i].second, depth + 1);
    }
    return out + "}";
}

std::string repr_at(const Value& v, int depth) {
    check_depth(depth);
    switch (v.kind()) {
        case Value::Kind::String:
            return repr_string(v.as_string());
        case Value::Kind::List:
            // CPython prints an address here; no renderer can reproduce it.
            if (v.is_iterator())
                throw UnsupportedError("printing an iterator (map/select/... without |list)");
            return repr_items(v, depth);
        case Value::Kind::Dict:
            if (v.is_namespace()) return "<Namespace " + repr_dict(v.dict_data(), depth) + ">";
            return repr_dict(v.dict_data(), depth);
        default:
            return v.str();
    }
}

bool equals_at(const Value& a, const Value& b, int depth) {
    check_depth(depth);
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Value::Kind::Undefined:
        case Value::Kind::None:
            return true;
        case Value::Kind::String:
            return a.as_string() == b.as_string();
        case Value::Kind::List: {
            if (a.is_iterator() || b.is_iterator()) return &a.items() == &b.items();
            if (a.is_tuple() != b.is_tuple() || a.items().size() != b.items().size()) return false;
            for (std::size_t i = 0; i < a.items().size(); ++i)
                if (!equals_at(a.items()[i], b.items()[i], depth + 1)) return false;
            return true;
        }
        case Value::Kind::Dict: {
            if (a.is_namespace() || b.is_namespace()) return &a.dict_data() == &b.dict_data();
            const auto& x = a.dict_data().entries;
            const auto& y = b.dict_data();
            if (x.size() != y.entries.size()) return false;
            for (const auto& [k, val] : x) {
                const Value* other = y.find(k);
                if (!other || !equals_at(val, *other, depth + 1)) return false;
            }
            return true;
        }
        case Value::Kind::Callable:
            return &a.function() == &b.function();
        default:
            return false;
    }
}

}  // namespace

const Value* DictData::find(const Value& key) const {
    for (const auto& [k, v] : entries)
        if (equals(k, key)) return &v;
    return nullptr;
}

void DictData::set(Value key, Value value) {
    for (auto& [k, v] : entries) {
        if (equals(k, key)) {
            const int d = 1 + value.nesting();
            if (d > Value::kMaxNesting) check_depth(d);
            depth = std::max(depth, d);
            v = std::move(value);
            return;
        }
    }
    const int d = 1 + std::max(key.nesting(), value.nesting());
    if (d > Value::kMaxNesting) check_depth(d);
    depth = std::max(depth, d);
    entries.emplace_back(std::move(key), std::move(value));
}

Value Value::undefined(std::string hint) {
    Value v;
    v.hint_ = std::move(hint);
    return v;
}

Value Value::none() {
    Value v;
    v.kind_ = Kind::None;
    return v;
}

Value Value::list(std::vector<Value> items, bool tuple) {
    Value v;
    v.kind_ = Kind::List;
    v.list_ = std::make_shared<ListData>();
    int d = 1;
    for (const auto& x : items) d = std::max(d, 1 + x.nesting());
    check_depth(d);
    v.list_->depth = d;
    v.list_->items = std::move(items);
    v.list_->is_tuple = tuple;
    return v;
}

Value Value::iterator(std::vector<Value> items) {
    Value v = list(std::move(items));
    v.list_->is_iterator = true;
    return v;
}

Value Value::dict_view(std::string name, std::vector<Value> items) {
    Value v = list(std::move(items));
    v.list_->view_name = std::move(name);
    return v;
}

Value Value::failed_iterator(std::string error) {
    Value v = iterator({});
    v.list_->deferred_error = std::move(error);
    return v;
}

Value Value::markup(std::string s) {
    Value v(std::move(s));
    v.markup_ = true;
    return v;
}

Value Value::dict() {
    Value v;
    v.kind_ = Kind::Dict;
    v.dict_ = std::make_shared<DictData>();
    return v;
}

Value Value::make_namespace() {
    Value v = dict();
    v.dict_->is_namespace = true;
    return v;
}

Value Value::function(std::string name, Function fn) {
    Value v;
    v.kind_ = Kind::Callable;
    v.fn_ = std::make_shared<const Function>(std::move(fn));
    v.hint_ = std::move(name);
    return v;
}

bool Value::truthy() const {
    switch (kind_) {
        case Kind::Undefined:
        case Kind::None:
            return false;
        case Kind::Bool:
        case Kind::Int:
            return int_ != 0;
        case Kind::Float:
            return float_ != 0.0;
        case Kind::String:
            return !str_->empty();
        case Kind::List:
            return list_->is_iterator || !list_->items.empty();
        case Kind::Dict:
            return dict_->is_namespace || !dict_->entries.empty();
        case Kind::Callable:
            return true;
    }
    return false;
}

std::string Value::str() const {
    switch (kind_) {
        case Kind::Undefined:
            return "";  // jinja2's default Undefined prints as nothing
        case Kind::None:
            return "None";
        case Kind::Bool:
            return int_ ? "True" : "False";
        case Kind::Int:
            return std::to_string(int_);
        case Kind::Float:
            return format_float(float_);
        case Kind::String:
            return *str_;
        case Kind::Callable:
            return "<function " + hint_ + ">";
        default:
            return repr_at(*this, 0);
    }
}

std::string Value::repr() const {
    if (kind_ == Kind::Undefined) return "Undefined";
    return repr_at(*this, 0);
}

std::string Value::type_name() const {
    switch (kind_) {
        case Kind::Undefined:
            return "Undefined";
        case Kind::None:
            return "NoneType";
        case Kind::Bool:
            return "bool";
        case Kind::Int:
            return "int";
        case Kind::Float:
            return "float";
        case Kind::String:
            return "str";
        case Kind::List:
            return is_iterator() ? "generator" : is_tuple() ? "tuple" : "list";
        case Kind::Dict:
            return is_namespace() ? "Namespace" : "dict";
        case Kind::Callable:
            return "function";
    }
    return "object";
}

bool equals(const Value& a, const Value& b) {
    return equals_at(a, b, 0);
}

bool less_than(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
        return a.as_int() < b.as_int();
    }
    if (a.is_string() && b.is_string())
        return a.as_string() < b.as_string();  // UTF-8 byte order = code point order
    if (a.is_list() && b.is_list() && !a.is_iterator() && !b.is_iterator() &&
        a.is_tuple() == b.is_tuple()) {
        const auto& x = a.items();
        const auto& y = b.items();
        for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (equals(x[i], y[i])) continue;
            return less_than(x[i], y[i]);
        }
        return x.size() < y.size();
    }
    throw TemplateRuntimeError("'<' not supported between instances of '" + a.type_name() +
                               "' and '" + b.type_name() + "'");
}

std::string format_float(double f) {
    if (std::isnan(f)) return "nan";
    if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
    if (f == 0.0) return std::signbit(f) ? "-0.0" : "0.0";
    // Shortest round-trip digits in d.ddde±x form, then laid out by Python's repr rule: fixed
    // notation for decimal exponents in [-4, 16), scientific otherwise.
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    bool negative = sci[0] == '-';
    if (negative) sci.erase(0, 1);
    auto e = sci.find('e');
    int exp = std::atoi(sci.c_str() + e + 1);
    std::string digits;
    for (std::size_t i = 0; i < e; ++i)
        if (sci[i] != '.') digits += sci[i];
    std::string out;
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            out = "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
        } else if (static_cast<std::size_t>(exp) + 1 >= digits.size()) {
            out =
                digits + std::string(static_cast<std::size_t>(exp) + 1 - digits.size(), '0') + ".0";
        } else {
            out = digits.substr(0, static_cast<std::size_t>(exp) + 1) + "." +
                  digits.substr(static_cast<std::size_t>(exp) + 1);
        }
    } else {
        out = digits.substr(0, 1);
        if (digits.size() > 1) out.append(".").append(digits, 1);
        char eb[16];
        std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
        out += eb;
    }
    return negative ? "-" + out : out;
}

std::string repr_string(std::string_view s) {
    const bool has_single = s.find('\'') != std::string_view::npos;
    const bool has_double = s.find('"') != std::string_view::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    for (char32_t cp : utf8::decode(s)) {
        if (cp == static_cast<char32_t>(quote) || cp == '\\') {
            out += '\\';
            out += static_cast<char>(cp);
        } else if (cp == '\n') {
            out += "\\n";
        } else if (cp == '\r') {
            out += "\\r";
        } else if (cp == '\t') {
            out += "\\t";
        } else if (!utf8::is_printable(cp)) {
            char buf[16];
            if (cp < 0x100)
                std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
            else if (cp < 0x10000)
                std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
            else
                std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(cp));
            out += buf;
        } else {
            utf8::append(out, cp);
        }
    }
    out += quote;
    return out;
}

}  // namespace fluoro::jinja
