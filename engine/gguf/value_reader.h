// Reading GGUF metadata values and strings off a ByteCursor: scalars of every width, UTF-8
// strings, and arrays of scalars or strings (whose counts are checked against the bytes left
// before anything is allocated). Part of the GgufFile parser; not a public API.
#pragma once

#include <cstdint>
#include <string_view>

#include "gguf/byte_cursor.h"
#include "gguf/gguf_value.h"

namespace fluoro::gguf {

// Reads a GGUF string that must be valid UTF-8; `what` names it in errors ("key", ...).
std::string_view read_utf8(ByteCursor& c, std::string_view what);

// Reads the value of `key` whose on-disk type code `raw_type` was read at byte `type_at`.
Value read_value(ByteCursor& c, uint32_t raw_type, uint64_t type_at, std::string_view key);

}  // namespace fluoro::gguf
