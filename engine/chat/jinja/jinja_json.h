// Python's json.dumps, which the tojson filter calls in transformers' chat-template environment
// (json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...)). Templates feed
// its output to the model verbatim, so spacing and escapes must match byte for byte.
#pragma once

#include <optional>
#include <string>

#include "chat/jinja/jinja_value.h"

namespace fluoro::jinja {

struct JsonOptions {
    bool ensure_ascii = false;
    std::optional<std::string> indent;  // None: one line; else the string repeated per level
    std::optional<std::string> item_separator;  // default ", " (or "," when indented)
    std::optional<std::string> key_separator;   // default ": "
    bool sort_keys = false;
};

// Throws TemplateRuntimeError for what Python's json refuses (undefined, functions, namespaces).
std::string to_json(const Value& v, const JsonOptions& options);

}  // namespace fluoro::jinja
