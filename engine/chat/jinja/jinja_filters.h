// Jinja2's built-in filters and tests (value|filter(args), value is test(args)) that chat
// templates use, with Jinja2's semantics, plus the name lists the parser checks against.
#pragma once

#include <string_view>

#include "chat/jinja/jinja_value.h"

namespace fluoro::jinja {

bool has_filter(std::string_view name);         // implemented here
bool has_test(std::string_view name);           // implemented here
bool jinja2_has_filter(std::string_view name);  // a Jinja2 built-in (implemented or not)
bool jinja2_has_test(std::string_view name);

// Throw TemplateRuntimeError for bad arguments and for a name that is not implemented.
Value apply_filter(std::string_view name, const Value& value, const CallArgs& args);
bool apply_test(std::string_view name, const Value& value, const CallArgs& args);

}  // namespace fluoro::jinja
