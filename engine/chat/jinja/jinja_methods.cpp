// The Python methods templates call on strings, dicts and lists (`content.strip()`,
// `message.get('x')`, `tools.items()`), bound to their object as callables.
#include <set>

#include "chat/jinja/jinja_access.h"
#include "chat/jinja/jinja_error.h"
#include "chat/jinja/jinja_strings.h"
#include "chat/jinja/jinja_utf8.h"

namespace fluoro::jinja {
namespace {

std::optional<std::string> opt_string(const Value* v, std::string_view what) {
    if (!v || v->is_none()) return std::nullopt;
    if (!v->is_string()) throw TemplateRuntimeError(std::string(what) + " arg must be None or str");
    return v->as_string();
}

const std::string& need_string(const Value* v, std::string_view what) {
    if (!v || !v->is_string())
        throw TemplateRuntimeError(std::string(what) + "() argument must be str, not " +
                                   (v ? v->type_name() : std::string("nothing")));
    return v->as_string();
}

std::int64_t opt_int(const Value* v, std::int64_t fallback) {
    if (!v || v->is_none()) return fallback;
    if (!v->is_int() && !v->is_bool())
        throw TemplateRuntimeError("an integer is required, not " + v->type_name());
    return v->as_int();
}

Value strings(const std::vector<std::string>& parts) {
    std::vector<Value> out;
    out.reserve(parts.size());
    for (const auto& p : parts) out.emplace_back(p);
    return Value::list(std::move(out));
}

// startswith/endswith accept one string or a tuple of them.
bool affix(const std::string& s, const Value* arg_v, bool prefix) {
    auto test = [&](const Value& p) {
        const std::string& a = need_string(&p, prefix ? "startswith" : "endswith");
        if (a.size() > s.size()) return false;
        return prefix ? s.compare(0, a.size(), a) == 0
                      : s.compare(s.size() - a.size(), a.size(), a) == 0;
    };
    if (arg_v && arg_v->is_list()) {
        for (const auto& p : arg_v->items())
            if (test(p)) return true;
        return false;
    }
    if (!arg_v) throw TemplateRuntimeError("startswith/endswith takes at least 1 argument");
    return test(*arg_v);
}

// Python str.find over code points: the index it returns counts characters, not bytes.
std::int64_t find_cp(const std::string& s, const std::string& sub, bool reverse) {
    const auto f = reverse ? s.rfind(sub) : s.find(sub);
    if (f == std::string::npos) return -1;
    return static_cast<std::int64_t>(utf8::length(std::string_view(s).substr(0, f)));
}

Value string_method(const Value& obj, std::string_view name) {
    const std::string s = obj.as_string();
    using F = std::function<Value(const CallArgs&)>;
    F fn;
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        const bool l = name != "rstrip", r = name != "lstrip";
        fn = [s, l, r](const CallArgs& a) {
            return Value(py::strip(s, opt_string(arg(a, 0, "chars"), "strip"), l, r));
        };
    } else if (name == "split" || name == "rsplit") {
        const bool right = name == "rsplit";
        fn = [s, right](const CallArgs& a) {
            return strings(py::split(s, opt_string(arg(a, 0, "sep"), "sep"),
                                     opt_int(arg(a, 1, "maxsplit"), -1), right));
        };
    } else if (name == "splitlines") {
        fn = [s](const CallArgs&) { return strings(py::splitlines(s)); };
    } else if (name == "startswith" || name == "endswith") {
        const bool prefix = name == "startswith";
        fn = [s, prefix](const CallArgs& a) {
            return Value(affix(s, arg(a, 0, "prefix"), prefix));
        };
    } else if (name == "upper") {
        fn = [s](const CallArgs&) { return Value(py::upper(s)); };
    } else if (name == "lower") {
        fn = [s](const CallArgs&) { return Value(py::lower(s)); };
    } else if (name == "title") {
        fn = [s](const CallArgs&) { return Value(py::title(s)); };
    } else if (name == "capitalize") {
        fn = [s](const CallArgs&) { return Value(py::capitalize(s)); };
    } else if (name == "replace") {
        fn = [s](const CallArgs& a) {
            return Value(py::replace(s, need_string(arg(a, 0, "old"), "replace"),
                                     need_string(arg(a, 1, "new"), "replace"),
                                     opt_int(arg(a, 2, "count"), -1)));
        };
    } else if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
        const bool rev = name[0] == 'r';
        const bool raise = name.find("index") != std::string_view::npos;
        fn = [s, rev, raise](const CallArgs& a) {
            const auto i = find_cp(s, need_string(arg(a, 0, "sub"), "find"), rev);
            if (i < 0 && raise) throw TemplateRuntimeError("substring not found");
            return Value(i);
        };
    } else if (name == "count") {
        fn = [s](const CallArgs& a) {
            const std::string& sub = need_string(arg(a, 0, "sub"), "count");
            if (sub.empty()) return Value(static_cast<std::int64_t>(utf8::length(s) + 1));
            std::int64_t n = 0;
            for (auto p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
            return Value(n);
        };
    } else if (name == "format") {
        fn = [s](const CallArgs& a) { return Value(py::format(s, a)); };
    } else if (name == "join") {
        fn = [s](const CallArgs& a) {
            const Value* it = arg(a, 0, "iterable");
            if (!it) throw TemplateRuntimeError("join() takes exactly one argument");
            std::string out;
            bool first = true;
            for (const auto& x : iterate(*it)) {
                if (!x.is_string())
                    throw TemplateRuntimeError("sequence item: expected str instance, " +
                                               x.type_name() + " found");
                if (!first) out += s;
                first = false;
                out += x.as_string();
                check_size(out.size());
            }
            return Value(std::move(out));
        };
    } else if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" ||
               name == "isupper" || name == "islower") {
        const std::string n(name);
        fn = [s, n](const CallArgs&) {
            auto cps = utf8::decode(s);
            if (cps.empty()) return Value(false);
            bool any_cased = false;
            for (char32_t c : cps) {
                const bool digit = c >= '0' && c <= '9';
                const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
                if (n == "isdigit" && !digit) return Value(false);
                if (n == "isalpha" && !alpha) return Value(false);
                if (n == "isalnum" && !digit && !alpha) return Value(false);
                if (n == "isspace" && !utf8::is_space(c)) return Value(false);
                if (n == "isupper" && c >= 'a' && c <= 'z') return Value(false);
                if (n == "islower" && c >= 'A' && c <= 'Z') return Value(false);
                any_cased = any_cased || alpha;
            }
            if (n == "isupper" || n == "islower") return Value(any_cased);
            return Value(true);
        };
    } else {
        return Value::undefined();
    }
    return Value::function("str." + std::string(name), std::move(fn));
}

Value dict_method(const Value& obj, std::string_view name) {
    if (name == "get") {
        return Value::function("dict.get", [obj](const CallArgs& a) {
            const Value* k = arg(a, 0, "key");
            if (!k) throw TemplateRuntimeError("get expected at least 1 argument, got 0");
            const Value* v = obj.dict_data().find(*k);
            return v ? *v : arg_or(a, 1, "default", Value::none());
        });
    }
    if (name == "items" || name == "keys" || name == "values") {
        const int which = name == "items" ? 0 : name == "keys" ? 1 : 2;
        return Value::function("dict." + std::string(name), [obj, which](const CallArgs&) {
            std::vector<Value> out;
            for (const auto& [k, v] : obj.dict_data().entries) {
                if (which == 0)
                    out.push_back(Value::list({k, v}, true));
                else
                    out.push_back(which == 1 ? k : v);
            }
            static const char* const kViews[] = {"dict_items", "dict_keys", "dict_values"};
            return Value::dict_view(kViews[which], std::move(out));
        });
    }
    if (name == "copy") {
        return Value::function("dict.copy", [obj](const CallArgs&) {
            Value d = Value::dict();
            d.dict_data_mut().entries = obj.dict_data().entries;
            d.dict_data_mut().depth = obj.dict_data().depth;
            return d;
        });
    }
    return Value::undefined();
}

Value list_method(const Value& obj, std::string_view name) {
    if (name == "index" || name == "count") {
        const bool count = name == "count";
        return Value::function("list." + std::string(name), [obj, count](const CallArgs& a) {
            const Value* x = arg(a, 0, "value");
            if (!x) throw TemplateRuntimeError("list method takes exactly one argument");
            std::int64_t n = 0;
            for (std::size_t i = 0; i < obj.items().size(); ++i) {
                if (!equals(obj.items()[i], *x)) continue;
                if (!count) return Value(static_cast<std::int64_t>(i));
                ++n;
            }
            if (!count) throw TemplateRuntimeError(x->repr() + " is not in list");
            return Value(n);
        });
    }
    return Value::undefined();
}

}  // namespace

Value method(const Value& obj, std::string_view name) {
    // transformers renders in jinja2's ImmutableSandboxedEnvironment, which refuses the methods
    // that change a list or dict; the refusal surfaces when the template calls one.
    static const std::set<std::string, std::less<>> kListMutators = {
        "append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"};
    static const std::set<std::string, std::less<>> kDictMutators = {"clear", "pop", "popitem",
                                                                     "setdefault", "update"};
    if ((obj.is_list() && !obj.is_tuple() && kListMutators.count(name)) ||
        (obj.is_dict() && kDictMutators.count(name)))
        return Value::undefined("access to attribute '" + std::string(name) + "' of '" +
                                obj.type_name() + "' object is unsafe.");
    if (obj.is_string()) return string_method(obj, name);
    if (obj.is_dict()) return dict_method(obj, name);
    if (obj.is_list()) return list_method(obj, name);
    return Value::undefined();
}

}  // namespace fluoro::jinja
