// Runs a parsed template: statements write text, expressions compute Values. Scoping follows
// Jinja2: a for loop's body and a macro get their own scope (a `set` inside does not leak out),
// `if` does not; namespace() objects are the way state crosses a loop boundary.
#pragma once

#include <string>
#include <string_view>

#include "chat/jinja/jinja_ast.h"
#include "chat/jinja/jinja_template.h"

namespace fluoro::jinja {

std::string execute(std::string_view normalized_source, const Body& body, const Value& context,
                    const RenderOptions& options);

}  // namespace fluoro::jinja
