// Finding JSON values inside model output without a JSON library (the engine links the standard
// library only): where a value ends, and an object's members as raw text spans. Strict RFC 8259
// syntax; no numbers outside JSON's grammar, no trailing commas, no comments. Used to read tool
// calls, where text that is not exactly JSON must stay the model's content.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fluoro {

// The index one past the JSON value starting at `pos` (leading whitespace skipped), or nullopt
// when the text there is not a complete JSON value. Nesting deeper than 512 counts as invalid.
std::optional<std::size_t> json_value_end(std::string_view text, std::size_t pos = 0);

// Whether `text`, surrounding whitespace aside, is exactly one JSON value.
bool is_json_value(std::string_view text);

// An object's members, in order: decoded key and the raw (undecoded) text of its value. nullopt
// when `object_text` (whitespace aside) is not exactly one JSON object.
std::optional<std::vector<std::pair<std::string, std::string_view>>> json_object_members(
    std::string_view object_text);

// The elements of a JSON array as raw text spans; nullopt when not exactly one array.
std::optional<std::vector<std::string_view>> json_array_elements(std::string_view array_text);

// The decoded value of a JSON string literal (its raw text, quotes included); nullopt when it is
// not one. \uXXXX escapes (surrogate pairs included) become UTF-8.
std::optional<std::string> json_string_value(std::string_view literal);

}  // namespace fluoro
