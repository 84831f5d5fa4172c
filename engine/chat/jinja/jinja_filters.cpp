#include "chat/jinja/jinja_filters.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "chat/jinja/jinja_access.h"
#include "chat/jinja/jinja_error.h"
#include "chat/jinja/jinja_json.h"
#include "chat/jinja/jinja_strings.h"
#include "chat/jinja/jinja_utf8.h"

namespace fluoro::jinja {
namespace {

using Filter = Value (*)(const Value&, const CallArgs&);
using Test = bool (*)(const Value&, const CallArgs&);

[[noreturn]] void fail(const std::string& what) {
    throw TemplateRuntimeError(what);
}

void need_defined(const Value& v) {
    if (v.is_undefined()) fail(v.name().empty() ? "undefined value used" : v.name());
}

bool flag(const CallArgs& a, std::size_t i, std::string_view name, bool fallback) {
    const Value* v = arg(a, i, name);
    return v ? v->truthy() : fallback;
}

CallArgs rest(const CallArgs& a, std::size_t from) {
    CallArgs out;
    for (std::size_t i = from; i < a.positional.size(); ++i)
        out.positional.push_back(a.positional[i]);
    out.keyword = a.keyword;
    return out;
}

// jinja2's make_attrgetter: "a.b.0" walks item lookups (numbers index lists).
Value attribute_of(const Value& item, const std::string& path) {
    Value v = item;
    std::size_t start = 0;
    while (true) {
        const auto dot = path.find('.', start);
        const std::string part =
            path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
            return c >= '0' && c <= '9';
        });
        v = numeric ? get_item(v, Value(static_cast<std::int64_t>(std::stoll(part))))
                    : get_item(v, Value(part));
        if (dot == std::string::npos) return v;
        start = dot + 1;
    }
}

// case_sensitive=False (the default of sort, unique, min, max, dictsort) compares strings lowered.
Value sort_key(const Value& v, bool case_sensitive) {
    if (!case_sensitive && v.is_string()) return Value(py::lower(v.as_string()));
    return v;
}

Value f_default(const Value& v, const CallArgs& a) {
    const bool boolean = flag(a, 1, "boolean", false);
    if (v.is_undefined() || (boolean && !v.truthy()))
        return arg_or(a, 0, "default_value", Value(""));
    return v;
}

Value f_length(const Value& v, const CallArgs&) {
    return Value(length(v));
}
Value f_string(const Value& v, const CallArgs&) {
    return Value(v.str());
}
Value f_safe(const Value& v, const CallArgs&) {
    return v.is_markup() ? v : Value::markup(v.str());
}

Value f_trim(const Value& v, const CallArgs& a) {
    const Value* chars = arg(a, 0, "chars");
    std::optional<std::string> c;
    if (chars && !chars->is_none()) c = chars->str();
    return Value(py::strip(v.str(), c, true, true));
}

Value f_upper(const Value& v, const CallArgs&) {
    return Value(py::upper(v.str()));
}
Value f_lower(const Value& v, const CallArgs&) {
    return Value(py::lower(v.str()));
}
Value f_capitalize(const Value& v, const CallArgs&) {
    return Value(py::capitalize(v.str()));
}

// jinja2's title filter (not str.title): words begin after '-', whitespace, ( { [ <.
Value f_title(const Value& v, const CallArgs&) {
    std::string out;
    bool start = true;
    for (char32_t c : utf8::decode(v.str())) {
        const bool sep =
            c == '-' || utf8::is_space(c) || c == '(' || c == '{' || c == '[' || c == '<';
        std::string one;
        utf8::append(one, c);
        out += sep ? one : start ? py::upper(one) : py::lower(one);
        start = sep;
    }
    return Value(std::move(out));
}

Value f_replace(const Value& v, const CallArgs& a) {
    const Value* old_v = arg(a, 0, "old");
    const Value* new_v = arg(a, 1, "new");
    if (!old_v || !new_v) fail("replace() needs old and new");
    const Value* count = arg(a, 2, "count");
    return Value(py::replace(v.str(), old_v->str(), new_v->str(),
                             count && !count->is_none() ? count->as_int() : -1));
}

Value f_join(const Value& v, const CallArgs& a) {
    const std::string sep = arg_or(a, 0, "d", Value("")).str();
    const Value* attr = arg(a, 1, "attribute");
    std::string out;
    bool first = true;
    for (const auto& x : iterate(v)) {
        if (!first) out += sep;
        first = false;
        out += (attr && !attr->is_none() ? attribute_of(x, attr->str()) : x).str();
        check_size(out.size());
    }
    return Value(std::move(out));
}

Value f_list(const Value& v, const CallArgs&) {
    return Value::list(iterate(v));
}

Value f_first(const Value& v, const CallArgs&) {
    auto items = iterate(v);
    if (items.empty()) return Value::undefined("No first item, sequence was empty.");
    return items.front();
}

// jinja2: next(iter(reversed(value))); a generator is not reversible.
Value f_last(const Value& v, const CallArgs&) {
    if (v.is_iterator()) fail("'generator' object is not reversible");
    auto items = iterate(v);
    if (items.empty()) return Value::undefined("No last item, sequence was empty.");
    return items.back();
}

Value f_reverse(const Value& v, const CallArgs&) {
    if (v.is_string()) {
        auto cps = utf8::decode(v.as_string());
        std::reverse(cps.begin(), cps.end());
        return Value(utf8::encode(cps));
    }
    // jinja2 returns reversed(value), an iterator, or for what is not reversible (a generator)
    // list(value) reversed.
    const bool reversible = !v.is_iterator();
    auto items = iterate(v);
    std::reverse(items.begin(), items.end());
    return reversible ? Value::iterator(std::move(items)) : Value::list(std::move(items));
}

Value f_items(const Value& v, const CallArgs&) {
    if (v.is_undefined()) return Value::list();
    if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
    std::vector<Value> out;
    for (const auto& [k, val] : v.dict_data().entries) out.push_back(Value::list({k, val}, true));
    return Value::iterator(std::move(out));
}

Value f_dictsort(const Value& v, const CallArgs& a) {
    if (!v.is_dict()) fail("dictsort filter needs a mapping");
    const bool cs = flag(a, 0, "case_sensitive", false);
    const std::string by = arg_or(a, 1, "by", Value("key")).str();
    const bool rev = flag(a, 2, "reverse", false);
    if (by != "key" && by != "value") fail("You can only sort by either \"key\" or \"value\"");
    const std::size_t pos = by == "key" ? 0 : 1;
    std::vector<Value> out;
    for (const auto& [k, val] : v.dict_data().entries) out.push_back(Value::list({k, val}, true));
    std::stable_sort(out.begin(), out.end(), [&](const Value& x, const Value& y) {
        const Value kx = sort_key(x.items()[pos], cs), ky = sort_key(y.items()[pos], cs);
        return rev ? less_than(ky, kx) : less_than(kx, ky);
    });
    return Value::list(std::move(out));
}

Value item_key(const Value& x, const Value* attr, bool cs) {
    return sort_key(attr && !attr->is_none() ? attribute_of(x, attr->str()) : x, cs);
}

Value f_sort(const Value& v, const CallArgs& a) {
    const bool rev = flag(a, 0, "reverse", false);
    const bool cs = flag(a, 1, "case_sensitive", false);
    const Value* attr = arg(a, 2, "attribute");
    auto items = iterate(v);
    std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
        const Value kx = item_key(x, attr, cs), ky = item_key(y, attr, cs);
        return rev ? less_than(ky, kx) : less_than(kx, ky);
    });
    return Value::list(std::move(items));
}

Value f_unique(const Value& v, const CallArgs& a) {
    const bool cs = flag(a, 0, "case_sensitive", false);
    const Value* attr = arg(a, 1, "attribute");
    std::vector<Value> out, seen;
    for (const auto& x : iterate(v)) {
        const Value k = item_key(x, attr, cs);
        if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, k); }))
            continue;
        seen.push_back(k);
        out.push_back(x);
    }
    return Value::iterator(std::move(out));
}

Value min_max(const Value& v, const CallArgs& a, bool want_max) {
    const bool cs = flag(a, 0, "case_sensitive", false);
    const Value* attr = arg(a, 1, "attribute");
    auto items = iterate(v);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    std::size_t best = 0;
    for (std::size_t i = 1; i < items.size(); ++i) {
        const Value ki = item_key(items[i], attr, cs), kb = item_key(items[best], attr, cs);
        if (want_max ? less_than(kb, ki) : less_than(ki, kb)) best = i;
    }
    return items[best];
}
Value f_min(const Value& v, const CallArgs& a) {
    return min_max(v, a, false);
}
Value f_max(const Value& v, const CallArgs& a) {
    return min_max(v, a, true);
}

Value f_sum(const Value& v, const CallArgs& a) {
    const Value* attr = arg(a, 0, "attribute");
    Value total = arg_or(a, 1, "start", Value(0));
    for (const auto& x : iterate(v))
        total = binary_op("+", total, attr && !attr->is_none() ? attribute_of(x, attr->str()) : x);
    return total;
}

Value f_map(const Value& v, const CallArgs& a) {
    std::vector<Value> out;
    if (!v.truthy()) return Value::iterator({});  // jinja2 walks the sequence only `if value:`
    if (a.positional.empty()) {
        const Value* attr = arg(a, 99, "attribute");
        if (!attr) fail("map() needs a filter name or attribute=");
        const Value* dflt = arg(a, 99, "default");
        for (const auto& x : iterate(v)) {
            Value r = attribute_of(x, attr->str());
            out.push_back(r.is_undefined() && dflt ? *dflt : r);
        }
        return Value::iterator(std::move(out));
    }
    const std::string name = a.positional[0].str();
    const CallArgs fargs = rest(a, 1);
    for (const auto& x : iterate(v)) out.push_back(apply_filter(name, x, fargs));
    return Value::iterator(std::move(out));
}

// select / reject / selectattr / rejectattr share one walk.
Value select_common(const Value& v, const CallArgs& a, bool by_attr, bool keep) {
    std::size_t next = 0;
    std::string attr;
    if (by_attr) {
        if (a.positional.empty()) fail("selectattr() needs an attribute name");
        attr = a.positional[next++].str();
    }
    std::string test;
    if (a.positional.size() > next) test = a.positional[next++].str();
    const CallArgs targs = rest(a, next);
    std::vector<Value> out;
    if (!v.truthy()) return Value::iterator({});  // jinja2 walks the sequence only `if seq:`
    for (const auto& x : iterate(v)) {
        const Value subject = by_attr ? attribute_of(x, attr) : x;
        const bool ok = test.empty() ? subject.truthy() : apply_test(test, subject, targs);
        if (ok == keep) out.push_back(x);
    }
    return Value::iterator(std::move(out));
}
Value f_select(const Value& v, const CallArgs& a) {
    return select_common(v, a, false, true);
}
Value f_reject(const Value& v, const CallArgs& a) {
    return select_common(v, a, false, false);
}
Value f_selectattr(const Value& v, const CallArgs& a) {
    return select_common(v, a, true, true);
}
Value f_rejectattr(const Value& v, const CallArgs& a) {
    return select_common(v, a, true, false);
}

// transformers' tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None,
// sort_keys=False).
Value f_tojson(const Value& v, const CallArgs& a) {
    JsonOptions o;
    o.ensure_ascii = flag(a, 0, "ensure_ascii", false);
    if (const Value* ind = arg(a, 1, "indent"); ind && !ind->is_none()) {
        if (ind->is_string())
            o.indent = ind->as_string();
        else if (ind->is_int())
            o.indent = std::string(static_cast<std::size_t>(std::max<std::int64_t>(
                                       0, std::min<std::int64_t>(ind->as_int(), 64))),
                                   ' ');
        else
            fail("tojson indent must be an int or a string");
    }
    if (const Value* sep = arg(a, 2, "separators"); sep && !sep->is_none()) {
        if (!sep->is_list() || sep->items().size() != 2) fail("tojson separators must be a pair");
        o.item_separator = sep->items()[0].str();
        o.key_separator = sep->items()[1].str();
    }
    o.sort_keys = flag(a, 3, "sort_keys", false);
    return Value(to_json(v, o));
}

// jinja2 3.x indent: the first line only with first=True, blank lines only with blank=True.
Value f_indent(const Value& v, const CallArgs& a) {
    const Value w = arg_or(a, 0, "width", Value(4));
    const std::string pad =
        w.is_string()
            ? w.as_string()
            : std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(w.as_int(), 0, 1024)),
                          ' ');
    const bool first = flag(a, 1, "first", false);
    const bool blank = flag(a, 2, "blank", false);
    // jinja2 appends "\n" to the value first: anything but a string fails there.
    if (!v.is_string()) fail("indent filter needs a string, got " + v.type_name());
    auto lines = py::splitlines(v.str() + "\n");
    std::string out;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (i) out += "\n";
        if (i > 0 && (blank || !lines[i].empty())) out += pad;
        out += lines[i];
        check_size(out.size());
    }
    if (first) out = pad + out;
    return Value(std::move(out));
}

Value f_int(const Value& v, const CallArgs& a) {
    const Value dflt = arg_or(a, 0, "default", Value(0));
    const std::int64_t base = arg_or(a, 1, "base", Value(10)).as_int();
    if (v.is_string()) {
        if (auto i = py::parse_int(v.as_string(), static_cast<int>(base))) return Value(*i);
        if (auto f = py::parse_float(v.as_string()); f && std::isfinite(*f))
            return Value(static_cast<std::int64_t>(*f));
        return dflt;
    }
    if (v.is_int() || v.is_bool()) return Value(v.as_int());
    if (v.is_float()) {
        if (!std::isfinite(v.as_double())) return dflt;
        return Value(static_cast<std::int64_t>(v.as_double()));
    }
    need_defined(v);
    return dflt;
}

Value f_float(const Value& v, const CallArgs& a) {
    const Value dflt = arg_or(a, 0, "default", Value(0.0));
    if (v.is_number()) return Value(v.as_double());
    if (v.is_string()) {
        if (auto f = py::parse_float(v.as_string())) return Value(*f);
        return dflt;
    }
    need_defined(v);
    return dflt;
}

Value f_abs(const Value& v, const CallArgs&) {
    if (v.is_int() || v.is_bool()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    if (v.is_float()) return Value(std::fabs(v.as_double()));
    fail("bad operand type for abs(): '" + v.type_name() + "'");
}

Value f_round(const Value& v, const CallArgs& a) {
    const std::int64_t precision = arg_or(a, 0, "precision", Value(0)).as_int();
    const std::string method = arg_or(a, 1, "method", Value("common")).str();
    if (!v.is_number()) fail("round filter needs a number");
    // Python's round(int, n) stays an int (n >= 0); ceil/floor divide, giving a float.
    if (method == "common" && !v.is_float() && precision >= 0) return Value(v.as_int());
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double x = v.as_double() * scale;
    double r;
    if (method == "common")
        r = std::nearbyint(x);  // Python's round(): half to even
    else if (method == "ceil")
        r = std::ceil(x);
    else if (method == "floor")
        r = std::floor(x);
    else
        fail("method must be common, ceil or floor");
    return Value(r / scale);
}

Value f_escape(const Value& v, const CallArgs&) {
    return html_escape(v);
}

Value f_wordcount(const Value& v, const CallArgs&) {
    std::int64_t n = 0;
    bool in_word = false;
    for (char32_t c : utf8::decode(v.str())) {
        const bool w = c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                       (c >= 'A' && c <= 'Z') || c >= 0x80;
        if (w && !in_word) ++n;
        in_word = w;
    }
    return Value(n);
}

Value f_batch(const Value& v, const CallArgs& a) {
    const std::int64_t n = arg_or(a, 0, "linecount", Value(1)).as_int();
    if (n <= 0) fail("batch size must be positive");
    const Value* fill = arg(a, 1, "fill_with");
    std::vector<Value> out, cur;
    for (const auto& x : iterate(v)) {
        cur.push_back(x);
        if (static_cast<std::int64_t>(cur.size()) == n) {
            out.push_back(Value::list(std::move(cur)));
            cur.clear();
        }
    }
    if (!cur.empty()) {
        if (fill && !fill->is_none())
            while (static_cast<std::int64_t>(cur.size()) < n) cur.push_back(*fill);
        out.push_back(Value::list(std::move(cur)));
    }
    return Value::iterator(std::move(out));
}

// attr() reads the Python attribute only: a dict's method, never its item.
Value f_attr(const Value& v, const CallArgs& a) {
    const Value* name = arg(a, 0, "name");
    if (!name) fail("attr() needs a name");
    if (v.is_dict()) return method(v, name->str());
    return get_attr(v, name->str());
}

Value f_center(const Value& v, const CallArgs& a) {
    const std::int64_t width = arg_or(a, 0, "width", Value(80)).as_int();
    auto cps = utf8::decode(v.str());
    const auto n = static_cast<std::int64_t>(cps.size());
    if (width <= n) return Value(v.str());
    const std::int64_t total = std::min<std::int64_t>(width, 1 << 20) - n;
    // Python's str.center puts the odd space on the right unless the total and width are odd.
    const std::int64_t left = total / 2 + (total & width & 1);
    return Value(std::string(static_cast<std::size_t>(left), ' ') + v.str() +
                 std::string(static_cast<std::size_t>(total - left), ' '));
}

const std::map<std::string, Filter, std::less<>>& filters() {
    static const std::map<std::string, Filter, std::less<>> kFilters = {
        {"abs", f_abs},
        {"attr", f_attr},
        {"batch", f_batch},
        {"capitalize", f_capitalize},
        {"center", f_center},
        {"count", f_length},
        {"d", f_default},
        {"default", f_default},
        {"dictsort", f_dictsort},
        {"e", f_escape},
        {"escape", f_escape},
        {"first", f_first},
        {"float", f_float},
        {"forceescape", f_escape},
        {"indent", f_indent},
        {"int", f_int},
        {"items", f_items},
        {"join", f_join},
        {"last", f_last},
        {"length", f_length},
        {"list", f_list},
        {"lower", f_lower},
        {"map", f_map},
        {"max", f_max},
        {"min", f_min},
        {"reject", f_reject},
        {"rejectattr", f_rejectattr},
        {"replace", f_replace},
        {"reverse", f_reverse},
        {"round", f_round},
        {"safe", f_safe},
        {"select", f_select},
        {"selectattr", f_selectattr},
        {"sort", f_sort},
        {"string", f_string},
        {"sum", f_sum},
        {"title", f_title},
        {"tojson", f_tojson},
        {"trim", f_trim},
        {"unique", f_unique},
        {"upper", f_upper},
        {"wordcount", f_wordcount},
    };
    return kFilters;
}

// --- tests ---

bool t_defined(const Value& v, const CallArgs&) {
    return !v.is_undefined();
}
bool t_undefined(const Value& v, const CallArgs&) {
    return v.is_undefined();
}
bool t_none(const Value& v, const CallArgs&) {
    return v.is_none();
}
bool t_string(const Value& v, const CallArgs&) {
    return v.is_string();
}
bool t_number(const Value& v, const CallArgs&) {
    return v.is_number();
}  // bool is a Number
bool t_integer(const Value& v, const CallArgs&) {
    return v.is_int();
}
bool t_float(const Value& v, const CallArgs&) {
    return v.is_float();
}
bool t_boolean(const Value& v, const CallArgs&) {
    return v.is_bool();
}
bool t_true(const Value& v, const CallArgs&) {
    return v.is_bool() && v.as_bool();
}
bool t_false(const Value& v, const CallArgs&) {
    return v.is_bool() && !v.as_bool();
}
bool t_mapping(const Value& v, const CallArgs&) {
    return v.is_dict();
}
bool t_callable(const Value& v, const CallArgs&) {
    return v.is_callable() || v.is_undefined();  // jinja2's Undefined has __call__ (which raises)
}
bool t_escaped(const Value&, const CallArgs&) {
    return false;
}
// jinja2's Undefined iterates (as empty) and has __len__/__getitem__, so it passes both.
bool t_iterable(const Value& v, const CallArgs&) {
    return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool t_sequence(const Value& v, const CallArgs&) {
    // a generator has no len(), a dict view no [index]
    return t_iterable(v, {}) && !v.is_iterator() &&
           !(v.is_list() && !v.list_data_view_name().empty());
}

// jinja2: value % 2 == 1 / == 0, so floats work (2.0 is even) and Python's modulo sign rule holds.
bool t_odd(const Value& v, const CallArgs&) {
    return equals(binary_op("%", v, Value(2)), Value(1));
}
bool t_even(const Value& v, const CallArgs&) {
    return equals(binary_op("%", v, Value(2)), Value(0));
}
bool t_divisibleby(const Value& v, const CallArgs& a) {
    const Value* n = arg(a, 0, "num");
    if (!n) fail("divisibleby needs a number");
    return binary_op("%", v, *n).truthy() == false;
}

const Value& other(const CallArgs& a) {
    const Value* o = arg(a, 0, "other");
    if (!o) fail("comparison test needs an argument");
    return *o;
}
bool t_eq(const Value& v, const CallArgs& a) {
    return equals(v, other(a));
}
bool t_ne(const Value& v, const CallArgs& a) {
    return !equals(v, other(a));
}
bool t_lt(const Value& v, const CallArgs& a) {
    return binary_op("<", v, other(a)).truthy();
}
bool t_le(const Value& v, const CallArgs& a) {
    return binary_op("<=", v, other(a)).truthy();
}
bool t_gt(const Value& v, const CallArgs& a) {
    return binary_op(">", v, other(a)).truthy();
}
bool t_ge(const Value& v, const CallArgs& a) {
    return binary_op(">=", v, other(a)).truthy();
}
bool t_in(const Value& v, const CallArgs& a) {
    return contains(arg_or(a, 0, "seq", Value()), v);
}
// str(value).islower() / isupper(): at least one cased character, none of the other case.
bool cased_only(const Value& v, bool lower) {
    bool cased = false;
    for (char c : v.str()) {
        if (c >= 'a' && c <= 'z') {
            if (!lower) return false;
            cased = true;
        } else if (c >= 'A' && c <= 'Z') {
            if (lower) return false;
            cased = true;
        }
    }
    return cased;
}
bool t_lower(const Value& v, const CallArgs&) {
    return cased_only(v, true);
}
bool t_upper(const Value& v, const CallArgs&) {
    return cased_only(v, false);
}
// Identity for the singletons templates compare against (none, true, false); equality otherwise.
bool t_sameas(const Value& v, const CallArgs& a) {
    const Value& o = other(a);
    return v.kind() == o.kind() && equals(v, o);
}
bool t_filter(const Value& v, const CallArgs&) {
    return v.is_string() && has_filter(v.as_string());
}
bool t_test(const Value& v, const CallArgs&) {
    return v.is_string() && has_test(v.as_string());
}

const std::map<std::string, Test, std::less<>>& tests() {
    static const std::map<std::string, Test, std::less<>> kTests = {
        {"!=", t_ne},
        {"<", t_lt},
        {"<=", t_le},
        {"==", t_eq},
        {">", t_gt},
        {">=", t_ge},
        {"boolean", t_boolean},
        {"callable", t_callable},
        {"defined", t_defined},
        {"divisibleby", t_divisibleby},
        {"eq", t_eq},
        {"equalto", t_eq},
        {"escaped", t_escaped},
        {"even", t_even},
        {"false", t_false},
        {"filter", t_filter},
        {"float", t_float},
        {"ge", t_ge},
        {"greaterthan", t_gt},
        {"gt", t_gt},
        {"in", t_in},
        {"integer", t_integer},
        {"iterable", t_iterable},
        {"le", t_le},
        {"lessthan", t_lt},
        {"lower", t_lower},
        {"lt", t_lt},
        {"mapping", t_mapping},
        {"ne", t_ne},
        {"none", t_none},
        {"number", t_number},
        {"odd", t_odd},
        {"sameas", t_sameas},
        {"sequence", t_sequence},
        {"string", t_string},
        {"test", t_test},
        {"true", t_true},
        {"undefined", t_undefined},
        {"upper", t_upper},
    };
    return kTests;
}

}  // namespace

bool has_filter(std::string_view name) {
    return filters().count(name) > 0;
}
bool has_test(std::string_view name) {
    return tests().count(name) > 0;
}

bool jinja2_has_filter(std::string_view name) {
    static const std::set<std::string, std::less<>> kAll = {
        "abs",    "attr",       "batch",       "capitalize", "center",   "count",
        "d",      "default",    "dictsort",    "e",          "escape",   "filesizeformat",
        "first",  "float",      "forceescape", "format",     "groupby",  "indent",
        "int",    "items",      "join",        "last",       "length",   "list",
        "lower",  "map",        "max",         "min",        "pprint",   "random",
        "reject", "rejectattr", "replace",     "reverse",    "round",    "safe",
        "select", "selectattr", "slice",       "sort",       "string",   "striptags",
        "sum",    "title",      "tojson",      "trim",       "truncate", "unique",
        "upper",  "urlencode",  "urlize",      "wordcount",  "wordwrap", "xmlattr"};
    return kAll.count(name) > 0;
}

bool jinja2_has_test(std::string_view name) {
    return has_test(name);
}  // all of Jinja2's are here

Value apply_filter(std::string_view name, const Value& value, const CallArgs& args) {
    auto it = filters().find(name);
    if (it == filters().end()) fail("No filter named '" + std::string(name) + "'.");
    // These are generators in jinja2: their body runs when consumed, so a failure inside one
    // surfaces only then (an unconsumed one, or one tested for truth, never fails).
    static const std::set<std::string, std::less<>> kLazy = {
        "batch", "items", "map", "reject", "rejectattr", "select", "selectattr", "unique"};
    if (!kLazy.count(name)) return it->second(value, args);
    try {
        return it->second(value, args);
    } catch (const TemplateRuntimeError& e) {
        return Value::failed_iterator(e.what());
    }
}

bool apply_test(std::string_view name, const Value& value, const CallArgs& args) {
    auto it = tests().find(name);
    if (it == tests().end()) fail("No test named '" + std::string(name) + "'.");
    return it->second(value, args);
}

}  // namespace fluoro::jinja
