// UTF-8 as Python's str sees it: a sequence of code points. Templates index, slice, reverse and
// measure strings, and Python counts code points where std::string counts bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fluoro::jinja::utf8 {

// Invalid bytes decode as U+FFFD one byte at a time (never throws: context text is untrusted).
std::vector<char32_t> decode(std::string_view s);
void append(std::string& out, char32_t cp);
std::string encode(const std::vector<char32_t>& cps);
std::size_t length(std::string_view s);  // code points
bool is_ascii(std::string_view s);

// Python's str.isspace() for one code point (ASCII and the common Unicode spaces).
bool is_space(char32_t cp);
// Python's str.isprintable() for one code point, approximated: controls, the non-space Z*
// separators and common format characters are not printable.
bool is_printable(char32_t cp);

}  // namespace fluoro::jinja::utf8
