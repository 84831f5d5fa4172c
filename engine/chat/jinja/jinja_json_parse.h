// JSON text to the interpreter's values, as Python's json.loads builds them (objects keep their
// key order, as Python dicts do; integers stay integers): the tool definitions and tool-call
// arguments an API client sends, which chat templates receive as dicts and lists.
#pragma once

#include <string_view>

#include "chat/jinja/jinja_value.h"

namespace fluoro::jinja {

// Throws fluoro::Error naming the byte offset of the first thing that is not JSON (RFC 8259),
// including anything after the value but white space, and nesting deeper than 256.
Value parse_json(std::string_view text);

}  // namespace fluoro::jinja
