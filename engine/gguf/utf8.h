// UTF-8 validation for GGUF strings (keys, tensor names, string values). GGUF requires UTF-8;
// rejecting bad bytes at load time means every later consumer (tokenizer, UI, store) can
// trust the text it is handed.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace fluoro::gguf {

// Index of the first byte that does not start a well-formed UTF-8 sequence (overlong forms,
// surrogates and code points above U+10FFFF are ill-formed), or nullopt if `s` is valid.
std::optional<size_t> find_invalid_utf8(std::string_view s);

}  // namespace fluoro::gguf
