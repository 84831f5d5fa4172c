// JSON text -> a Jinja value, as Python's json.loads builds it: objects keep their key order
// (dicts are ordered), integers stay int, numbers with a fraction or exponent become float. Used
// to hand a request's tool definitions and tool-call arguments to a chat template the way
// transformers does (as parsed objects, not text).
#pragma once

#include <string_view>

#include "chat/jinja/jinja_value.h"

namespace fluoro {

// Throws fluoro::Error naming `what` when `json_text` is not exactly one JSON value.
jinja::Value json_to_jinja(std::string_view json_text, std::string_view what);

}  // namespace fluoro
