// Python's str methods on UTF-8 text (strip, split, replace, title, format, ...), shared by the
// string methods templates call and the filters built on them. Case mapping covers ASCII only.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja/jinja_value.h"

namespace fluoro::jinja::py {

// str.strip / lstrip / rstrip: `chars` absent strips whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                  bool right);
// str.split / rsplit: `sep` absent splits on whitespace runs; maxsplit < 0 is unlimited.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep,
                               std::int64_t maxsplit, bool from_right = false);
std::vector<std::string> splitlines(std::string_view s);
std::string replace(std::string_view s, std::string_view old, std::string_view with,
                    std::int64_t count);
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string title(std::string_view s);       // str.title(): each cased run starts upper
std::string capitalize(std::string_view s);  // first character upper, the rest lower
// str.format with {} / {0} / {name} fields and {{ }} escapes; a format spec is unsupported.
std::string format(std::string_view fmt, const CallArgs& args);
// Python's int(str): optional sign, surrounding whitespace, underscores between digits.
std::optional<std::int64_t> parse_int(std::string_view s, int base);
std::optional<double> parse_float(std::string_view s);

}  // namespace fluoro::jinja::py
