// Reading from values the way Jinja2's sandboxed environment does: `a.b` tries the Python
// attribute (a method such as dict.items or str.strip) before the item, `a['b']` the item before
// the attribute; a missing one is undefined. Also the Python operators on values.
#pragma once

#include <string>
#include <string_view>

#include "chat/jinja/jinja_value.h"

namespace fluoro::jinja {

Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
// obj[start:stop:step] on a list or string; null pointers stand for omitted bounds.
Value get_slice(const Value& obj, const Value* start, const Value* stop, const Value* step);

// The methods of str, dict and list a template may call (name -> bound callable), undefined when
// Python has no such method; methods that mutate are refused, as in the immutable sandbox.
Value method(const Value& obj, std::string_view name);

// Python iteration: list items, dict keys, string characters; undefined is empty.
std::vector<Value> iterate(const Value& v);
// Python len(); undefined is 0 (jinja2's Undefined.__len__).
std::int64_t length(const Value& v);

// Python binary operators: + - * / // % ** and the comparisons; `~` is concat (str of both).
Value binary_op(std::string_view op, const Value& a, const Value& b);
bool contains(const Value& container, const Value& item);  // Python `item in container`
// Python's TypeError for a list or dict used as a dict key or looked up with `in` on a dict.
void check_hashable(const Value& key);
// markupsafe.escape: & < > " ' as entities; Markup passes unchanged.
Value html_escape(const Value& v);

// A bound on strings and lists a template builds, so a doubling loop cannot take the memory.
inline constexpr std::size_t kMaxBuiltBytes = std::size_t{64} << 20;
void check_size(std::size_t bytes);

// Arguments by position or keyword, as Python binds them.
const Value* arg(const CallArgs& args, std::size_t index, std::string_view name);
Value arg_or(const CallArgs& args, std::size_t index, std::string_view name, Value fallback);

}  // namespace fluoro::jinja
