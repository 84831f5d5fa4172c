// Splits template text into tokens the way Jinja2's lexer does with the settings transformers
// renders chat templates under: trim_blocks (the newline after a block or comment tag is
// dropped), lstrip_blocks (spaces before a block or comment tag on its own line are dropped),
// `-` / `+` whitespace control on tags, one trailing newline of the template removed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fluoro::jinja {

enum class TokenType {
    Text,           // literal template text between tags
    VariableBegin,  // {{
    VariableEnd,    // }}
    BlockBegin,     // {%
    BlockEnd,       // %}
    Name,
    String,   // text holds the unescaped value
    Integer,  // text holds the digits (underscores removed)
    Float,
    Operator,  // text holds the operator: + - * / // % ** ~ ( ) [ ] { } , . : | = == != < > <= >=
    End,
};

struct Token {
    TokenType type;
    std::string text;
    std::size_t offset;  // into the normalized source, for line:column in errors
};

// Throws TemplateSyntaxError (with line:column) for unterminated tags, comments, strings and
// characters no token starts with.
std::vector<Token> tokenize(std::string_view normalized_source);

// \r\n and \r become \n and a single trailing newline is dropped (Jinja2's defaults:
// newline_sequence='\n', keep_trailing_newline=False).
std::string normalize_source(std::string_view source);

// "line:column" (both 1-based) of a byte offset in the normalized source.
std::string position(std::string_view normalized_source, std::size_t offset);

}  // namespace fluoro::jinja
