// A Jinja value: what a template reads from its context and computes. Mirrors the Python objects
// Jinja2 works on (None, bool, int, float, str, list/tuple, dict, callables, jinja2's Undefined and
// namespace) closely enough that printing, comparing and truth-testing agree with Python's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fluoro::jinja {

class Value;

// Arguments of a call from the template: f(a, b, key=c).
struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;
};
using Function = std::function<Value(const CallArgs&)>;

struct ListData {
    std::vector<Value> items;
    bool is_tuple = false;  // prints as (a, b) instead of [a, b]
    int depth = 1;          // nesting levels, this one included (see Value::nesting)
    // A Python iterator (what jinja2's map, select, unique, items, reverse return): always true,
    // no len(), not JSON, and consumed by the first walk over it.
    bool is_iterator = false;
    // A generator whose body failed: jinja2 raises only when it is consumed, so we keep the error.
    std::string deferred_error;
    // dict.items()/keys()/values() views print as dict_items([...]) etc.; empty for plain lists.
    std::string view_name;
};

// Insertion-ordered like a Python dict; lookups are linear, which is fine at chat-message sizes.
struct DictData {
    std::vector<std::pair<Value, Value>> entries;
    bool is_namespace = false;  // jinja2's namespace(): the only object `set x.attr` may change
    int depth = 1;              // nesting levels, this one included (see Value::nesting)

    const Value* find(const Value& key) const;
    void set(Value key, Value value);
};

class Value {
  public:
    enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Callable };

    Value() = default;  // undefined
    Value(bool b) : kind_(Kind::Bool), int_(b) {}
    Value(int i) : kind_(Kind::Int), int_(i) {}
    Value(std::int64_t i) : kind_(Kind::Int), int_(i) {}
    Value(double f) : kind_(Kind::Float), float_(f) {}
    Value(std::string s)
        : kind_(Kind::String), str_(std::make_shared<const std::string>(std::move(s))) {}
    Value(std::string_view s) : Value(std::string(s)) {}
    Value(const char* s) : Value(std::string(s)) {}

    // `hint` names what was looked up ("'foo' is undefined"), for the error when it is misused.
    static Value undefined(std::string hint = {});
    static Value none();
    static Value list(std::vector<Value> items = {}, bool tuple = false);
    static Value iterator(std::vector<Value> items);
    static Value failed_iterator(std::string error);
    static Value dict_view(std::string name, std::vector<Value> items);
    // markupsafe's Markup (what |safe and |escape return): `markup + str` HTML-escapes the str.
    static Value markup(std::string s);
    static Value dict();
    static Value make_namespace();
    static Value function(std::string name, Function fn);

    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::Undefined; }
    bool is_none() const { return kind_ == Kind::None; }
    bool is_bool() const { return kind_ == Kind::Bool; }
    bool is_int() const { return kind_ == Kind::Int; }
    bool is_float() const { return kind_ == Kind::Float; }
    bool is_number() const { return is_int() || is_float() || is_bool(); }  // Python: bool is int
    bool is_string() const { return kind_ == Kind::String; }
    bool is_markup() const { return is_string() && markup_; }
    bool is_list() const { return kind_ == Kind::List; }
    bool is_tuple() const { return is_list() && list_->is_tuple; }
    bool is_iterator() const { return is_list() && list_->is_iterator; }
    bool is_dict() const { return kind_ == Kind::Dict && !dict_->is_namespace; }
    bool is_namespace() const { return kind_ == Kind::Dict && dict_->is_namespace; }
    bool is_callable() const { return kind_ == Kind::Callable; }

    bool as_bool() const { return int_ != 0; }
    std::int64_t as_int() const { return int_; }  // Int or Bool
    double as_double() const { return is_float() ? float_ : static_cast<double>(int_); }
    const std::string& as_string() const { return *str_; }
    const std::vector<Value>& items() const { return list_->items; }
    // An iterator's items, leaving it exhausted (shared copies see it exhausted too).
    std::vector<Value> take_items() const { return std::move(list_->items); }
    const std::string& deferred_error() const { return list_->deferred_error; }
    const std::string& list_data_view_name() const { return list_->view_name; }
    const DictData& dict_data() const { return *dict_; }
    DictData& dict_data_mut() { return *dict_; }  // namespaces only: `set ns.x = ...`
    const Function& function() const { return *fn_; }
    const std::string& name() const { return hint_; }  // undefined's hint, callable's name

    // How deeply containers nest in this value (0 for a scalar). Bounded when a container is built
    // (TemplateRuntimeError beyond kMaxNesting), so a loop wrapping a list in a list millions of
    // times fails early instead of overflowing the stack when the value is compared or destroyed.
    int nesting() const {
        return kind_ == Kind::List ? list_->depth : kind_ == Kind::Dict ? dict_->depth : 0;
    }
    static constexpr int kMaxNesting = 400;

    bool truthy() const;
    std::string str() const;        // Python str(): what {{ value }} prints
    std::string repr() const;       // Python repr(): how a value prints inside a list or dict
    std::string type_name() const;  // Python's type name, for error messages

  private:
    Kind kind_ = Kind::Undefined;
    std::int64_t int_ = 0;
    double float_ = 0.0;
    std::shared_ptr<const std::string> str_;
    std::shared_ptr<ListData> list_;
    std::shared_ptr<DictData> dict_;
    std::shared_ptr<const Function> fn_;
    std::string hint_;
    bool markup_ = false;
};

// Python's ==: 1 == 1.0 == True; containers element-wise; undefined equals only undefined.
bool equals(const Value& a, const Value& b);
// Python's <, for sort and min/max: numbers with numbers, strings with strings, lists
// lexicographically. Throws TemplateRuntimeError for other pairs (Python's TypeError).
bool less_than(const Value& a, const Value& b);

// Python's repr() of a float: the shortest digits that round-trip, "1.0", "1e-05", "1e+16".
std::string format_float(double f);
// Python's repr() of a str: single quotes unless the text holds ' and no ".
std::string repr_string(std::string_view s);

}  // namespace fluoro::jinja
