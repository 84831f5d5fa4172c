// The errors a Jinja template raises. Each message starts with "line:column:" (of the template
// text) so a user can find the construct; TemplateRaised carries the template's own message.
#pragma once

#include <string>

#include "core/error.h"

namespace fluoro::jinja {

// Malformed template text: unterminated tag, unexpected token, unknown filter outside an `if`.
// (Jinja2 raises TemplateSyntaxError / TemplateAssertionError for these before rendering.)
class TemplateSyntaxError : public Error {
  public:
    using Error::Error;
};

// A failure while rendering: an undefined value used where Jinja2 refuses it, a type error,
// a resource bound (output size, loop steps, recursion) exceeded.
class TemplateRuntimeError : public Error {
  public:
    using Error::Error;
};

// raise_exception('...') called by the template: what() is exactly the template's message, since
// templates use it to tell the user what the conversation got wrong.
class TemplateRaised : public TemplateRuntimeError {
  public:
    using TemplateRuntimeError::TemplateRuntimeError;
};

}  // namespace fluoro::jinja
