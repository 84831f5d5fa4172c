#include "chat/jinja/jinja_access.h"

#include <cmath>
#include <limits>

#include "chat/jinja/jinja_error.h"
#include "chat/jinja/jinja_utf8.h"

namespace fluoro::jinja {
namespace {

[[noreturn]] void fail_undefined(const Value& v) {
    throw TemplateRuntimeError(v.name().empty() ? "undefined value used" : v.name());
}

[[noreturn]] void type_error(std::string_view op, const Value& a, const Value& b) {
    throw TemplateRuntimeError("unsupported operand type(s) for " + std::string(op) + ": '" +
                               a.type_name() + "' and '" + b.type_name() + "'");
}

// "'" + type name, built by appending: GCC 12 at -O2 warns falsely (-Wrestrict, bug 105651) on
// "literal" + std::string temporary.
std::string quoted_type(const Value& obj) {
    std::string s = "'";
    s += obj.type_name();
    return s;
}

Value missing_attr(const Value& obj, const std::string& name) {
    return Value::undefined(quoted_type(obj) + " object' has no attribute '" + name + "'");
}

// Python's slice.indices(): clamps the bounds for a sequence of `len` items.
void slice_indices(std::int64_t len, const Value* start, const Value* stop, std::int64_t step,
                   std::int64_t& lo, std::int64_t& hi) {
    auto clamp = [&](const Value* v, std::int64_t dflt, bool is_start) {
        if (!v || v->is_none()) return dflt;
        std::int64_t i = v->as_int();
        if (i < 0) i += len;
        if (step > 0) return i < 0 ? 0 : (i > len ? len : i);
        (void)is_start;
        return i < 0 ? -1 : (i >= len ? len - 1 : i);
    };
    lo = clamp(start, step > 0 ? 0 : len - 1, true);
    hi = clamp(stop, step > 0 ? len : -1, false);
}

bool is_index(const Value* v) {
    return !v || v->is_none() || v->is_int() || v->is_bool();
}

std::int64_t checked(bool overflow, std::int64_t r) {
    if (overflow) throw UnsupportedError("integer result exceeds 64 bits");
    return r;
}

}  // namespace

void check_size(std::size_t bytes) {
    if (bytes > kMaxBuiltBytes)
        throw TemplateRuntimeError("value larger than " + std::to_string(kMaxBuiltBytes >> 20) +
                                   " MiB");
}

const Value* arg(const CallArgs& args, std::size_t index, std::string_view name) {
    if (index < args.positional.size()) return &args.positional[index];
    for (const auto& [k, v] : args.keyword)
        if (k == name) return &v;
    return nullptr;
}

Value arg_or(const CallArgs& args, std::size_t index, std::string_view name, Value fallback) {
    const Value* v = arg(args, index, name);
    return v ? *v : fallback;
}

Value get_attr(const Value& obj, const std::string& name) {
    if (obj.is_undefined()) fail_undefined(obj);
    if (obj.is_namespace()) {
        const Value* v = obj.dict_data().find(Value(name));
        return v ? *v : missing_attr(obj, name);
    }
    Value m = method(obj, name);
    if (!m.is_undefined() || !m.name().empty()) return m;  // a method, or a refused (unsafe) one
    if (obj.is_dict()) {
        const Value* v = obj.dict_data().find(Value(name));
        if (v) return *v;
    }
    return missing_attr(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
    if (obj.is_undefined()) fail_undefined(obj);
    if (obj.is_dict() || obj.is_namespace()) {
        if (const Value* v = obj.dict_data().find(key)) return *v;
    } else if (((obj.is_list() && !obj.is_iterator() && obj.list_data_view_name().empty()) ||
                obj.is_string()) &&
               (key.is_int() || key.is_bool())) {
        std::int64_t i = key.as_int();
        if (obj.is_list()) {
            const auto n = static_cast<std::int64_t>(obj.items().size());
            if (i < 0) i += n;
            if (i >= 0 && i < n) return obj.items()[static_cast<std::size_t>(i)];
        } else {
            auto cps = utf8::decode(obj.as_string());
            const auto n = static_cast<std::int64_t>(cps.size());
            if (i < 0) i += n;
            if (i >= 0 && i < n) {
                std::string s;
                utf8::append(s, cps[static_cast<std::size_t>(i)]);
                return Value(std::move(s));
            }
        }
        return Value::undefined(obj.type_name() + " index out of range");
    }
    if (key.is_string() && !obj.is_namespace()) return get_attr(obj, key.as_string());
    return Value::undefined(quoted_type(obj) + " object' has no attribute " + key.repr());
}

Value get_slice(const Value& obj, const Value* start, const Value* stop, const Value* step_v) {
    if (obj.is_undefined()) fail_undefined(obj);
    if (!is_index(start) || !is_index(stop) || !is_index(step_v))
        return Value::undefined("slice indices must be integers or None");
    const std::int64_t step = step_v && !step_v->is_none() ? step_v->as_int() : 1;
    if (step == 0) throw TemplateRuntimeError("slice step cannot be zero");
    auto pick = [&](std::int64_t len, auto&& take) {
        std::int64_t lo, hi;
        slice_indices(len, start, stop, step, lo, hi);
        for (std::int64_t i = lo; step > 0 ? i < hi : i > hi; i += step)
            take(static_cast<std::size_t>(i));
    };
    if (obj.is_list()) {
        std::vector<Value> out;
        pick(static_cast<std::int64_t>(obj.items().size()),
             [&](std::size_t i) { out.push_back(obj.items()[i]); });
        return Value::list(std::move(out), obj.is_tuple());
    }
    if (obj.is_string()) {
        auto cps = utf8::decode(obj.as_string());
        std::vector<char32_t> out;
        pick(static_cast<std::int64_t>(cps.size()), [&](std::size_t i) { out.push_back(cps[i]); });
        return Value(utf8::encode(out));
    }
    return Value::undefined(quoted_type(obj) + "' object is not subscriptable");
}

std::vector<Value> iterate(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined:
            return {};
        case Value::Kind::List:
            if (v.is_iterator() && !v.deferred_error().empty())
                throw TemplateRuntimeError(v.deferred_error());
            return v.is_iterator() ? v.take_items() : v.items();
        case Value::Kind::Dict: {
            if (v.is_namespace()) break;
            std::vector<Value> keys;
            for (const auto& e : v.dict_data().entries) keys.push_back(e.first);
            return keys;
        }
        case Value::Kind::String: {
            std::vector<Value> chars;
            for (char32_t cp : utf8::decode(v.as_string())) {
                std::string s;
                utf8::append(s, cp);
                chars.emplace_back(std::move(s));
            }
            return chars;
        }
        default:
            break;
    }
    throw TemplateRuntimeError("'" + v.type_name() + "' object is not iterable");
}

std::int64_t length(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined:
            return 0;
        case Value::Kind::String:
            return static_cast<std::int64_t>(utf8::length(v.as_string()));
        case Value::Kind::List:
            if (v.is_iterator()) break;
            return static_cast<std::int64_t>(v.items().size());
        case Value::Kind::Dict:
            if (!v.is_namespace()) return static_cast<std::int64_t>(v.dict_data().entries.size());
            break;
        default:
            break;
    }
    throw TemplateRuntimeError("object of type '" + v.type_name() + "' has no len()");
}

void check_hashable(const Value& key) {
    if ((key.is_list() && !key.is_tuple()) || key.is_dict() || key.is_namespace())
        throw TemplateRuntimeError("unhashable type: '" + key.type_name() + "'");
    if (key.is_tuple())
        for (const auto& x : key.items()) check_hashable(x);
}

bool contains(const Value& container, const Value& item) {
    if (container.is_string()) {
        if (!item.is_string())
            throw TemplateRuntimeError("'in <string>' requires string as left operand, not " +
                                       item.type_name());
        return container.as_string().find(item.as_string()) != std::string::npos;
    }
    if (container.is_dict()) {
        check_hashable(item);
        return container.dict_data().find(item) != nullptr;
    }
    if (container.is_list()) {
        for (const auto& x : iterate(container))
            if (equals(x, item)) return true;
        return false;
    }
    if (container.is_undefined()) return false;  // iterates as empty
    throw TemplateRuntimeError("argument of type '" + container.type_name() + "' is not iterable");
}

Value html_escape(const Value& v) {
    if (v.is_markup()) return v;
    std::string out;
    for (char c : v.str()) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&#34;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return Value::markup(std::move(out));
}

Value binary_op(std::string_view op, const Value& a, const Value& b) {
    if (op == "~") {
        std::string s = a.str();
        const std::string t = b.str();
        check_size(s.size() + t.size());
        return Value(s + t);
    }
    if (op == "==") return Value(equals(a, b));
    if (op == "!=") return Value(!equals(a, b));
    if (op == "in") return Value(contains(b, a));
    if (op == "not in") return Value(!contains(b, a));
    if (a.is_undefined()) fail_undefined(a);
    if (b.is_undefined()) fail_undefined(b);
    // A generator supports none of the operators below (only ==, in, ~ above).
    if (a.is_iterator() || b.is_iterator()) type_error(op, a, b);
    if (op == "<") return Value(less_than(a, b));
    if (op == ">") return Value(less_than(b, a));
    if (op == "<=") return Value(!less_than(b, a));
    if (op == ">=") return Value(!less_than(a, b));

    const bool nums = a.is_number() && b.is_number();
    const bool ints = nums && !a.is_float() && !b.is_float();
    if (op == "+") {
        if (ints) {
            std::int64_t r = 0;
            const bool overflow = __builtin_add_overflow(a.as_int(), b.as_int(), &r);
            return Value(checked(overflow, r));
        }
        if (nums) return Value(a.as_double() + b.as_double());
        if (a.is_string() && b.is_string()) {
            check_size(a.as_string().size() + b.as_string().size());
            // Markup's __add__/__radd__ escape the plain operand (autoescape off or not).
            if (a.is_markup() || b.is_markup())
                return Value::markup(html_escape(a).as_string() + html_escape(b).as_string());
            return Value(a.as_string() + b.as_string());
        }
        if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
            check_size((a.items().size() + b.items().size()) * sizeof(Value));
            std::vector<Value> items = a.items();
            items.insert(items.end(), b.items().begin(), b.items().end());
            return Value::list(std::move(items), a.is_tuple());
        }
        type_error(op, a, b);
    }
    if (op == "-") {
        if (ints) {
            std::int64_t r = 0;
            const bool overflow = __builtin_sub_overflow(a.as_int(), b.as_int(), &r);
            return Value(checked(overflow, r));
        }
        if (nums) return Value(a.as_double() - b.as_double());
        type_error(op, a, b);
    }
    if (op == "*") {
        if (ints) {
            std::int64_t r = 0;
            const bool overflow = __builtin_mul_overflow(a.as_int(), b.as_int(), &r);
            return Value(checked(overflow, r));
        }
        if (nums) return Value(a.as_double() * b.as_double());
        const Value* seq = (a.is_string() || a.is_list())   ? &a
                           : (b.is_string() || b.is_list()) ? &b
                                                            : nullptr;
        const Value* count = seq == &a ? &b : &a;
        if (seq && (count->is_int() || count->is_bool())) {
            const std::int64_t n = count->as_int() < 0 ? 0 : count->as_int();
            const std::size_t unit =
                seq->is_string() ? seq->as_string().size() : seq->items().size() * sizeof(Value);
            if (unit && static_cast<std::uint64_t>(n) > kMaxBuiltBytes / unit)
                check_size(kMaxBuiltBytes + 1);
            if (seq->is_string()) {
                std::string s;
                for (std::int64_t i = 0; i < n; ++i) s += seq->as_string();
                return Value(std::move(s));
            }
            std::vector<Value> items;
            for (std::int64_t i = 0; i < n; ++i)
                items.insert(items.end(), seq->items().begin(), seq->items().end());
            return Value::list(std::move(items), seq->is_tuple());
        }
        type_error(op, a, b);
    }
    if (op == "/") {
        if (!nums) type_error(op, a, b);
        if (b.as_double() == 0.0) throw TemplateRuntimeError("division by zero");
        return Value(a.as_double() / b.as_double());
    }
    if (op == "//" || op == "%") {
        if (a.is_string() && op == "%")
            throw UnsupportedError("printf-style '%' string formatting is not supported");
        if (!nums) type_error(op, a, b);
        if (b.as_double() == 0.0) throw TemplateRuntimeError("integer division or modulo by zero");
        if (ints) {
            const std::int64_t x = a.as_int(), y = b.as_int();
            if (x == std::numeric_limits<std::int64_t>::min() && y == -1)
                throw UnsupportedError("integer result exceeds 64 bits");
            std::int64_t q = x / y, r = x % y;
            if (r != 0 && ((r < 0) != (y < 0))) {  // Python floors toward -infinity
                --q;
                r += y;
            }
            return Value(op == "//" ? q : r);
        }
        const double x = a.as_double(), y = b.as_double();
        if (op == "//") return Value(std::floor(x / y));
        double r = std::fmod(x, y);
        if (r != 0.0 && ((r < 0) != (y < 0))) r += y;
        return Value(r);
    }
    if (op == "**") {
        if (!nums) type_error(op, a, b);
        if (ints && b.as_int() >= 0) {
            const std::int64_t base = a.as_int(), e = b.as_int();
            if (base == 0 || base == 1) return Value(e == 0 ? std::int64_t{1} : base);
            if (base == -1) return Value(e % 2 ? std::int64_t{-1} : std::int64_t{1});
            std::int64_t r = 1;  // |base| >= 2: overflows within 63 steps
            for (std::int64_t i = 0; i < e; ++i)
                if (__builtin_mul_overflow(r, base, &r))
                    throw UnsupportedError("integer result exceeds 64 bits");
            return Value(r);
        }
        return Value(std::pow(a.as_double(), b.as_double()));
    }
    throw TemplateRuntimeError("unknown operator '" + std::string(op) + "'");
}

}  // namespace fluoro::jinja
