// Python's str.strip() on UTF-8 text: what Jinja's `trim` filter does inside chat templates
// (Gemma, Llama 3). Strips every code point for which Python's str.isspace() is true (ASCII
// whitespace, \x1c-\x1f, NEL, NBSP, the U+2000 spaces, line/paragraph separators, ...), but not
// ZERO WIDTH SPACE or a BOM, so rendered prompts match the reference templates byte for byte.
#pragma once

#include <string_view>

namespace fluoro {

// True for the code points Python's str.isspace() accepts.
bool is_python_space(char32_t cp);

// `text` without leading and trailing Python whitespace. Invalid UTF-8 at an end is kept.
std::string_view python_strip(std::string_view text);

}  // namespace fluoro
