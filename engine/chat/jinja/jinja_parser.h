// Template tokens to statements, following Jinja2's grammar and operator precedence
// (or < and < not < comparisons < + - < ~ < * / // % < ** < unary < filters/tests < postfix).
#pragma once

#include <string_view>
#include <vector>

#include "chat/jinja/jinja_ast.h"
#include "chat/jinja/jinja_lexer.h"

namespace fluoro::jinja {

// Throws TemplateSyntaxError for malformed templates (and, like Jinja2 at compile time, for an
// unknown filter or test outside an `if`), UnsupportedError for Jinja2 features not implemented
// here (include, extends, call blocks, ...). Messages start with line:column.
Body parse(std::string_view normalized_source, const std::vector<Token>& tokens);

}  // namespace fluoro::jinja
