// The GPT-2 byte-level alphabet used by byte-level BPE vocabularies (tokenizer.ggml.model =
// "gpt2"): every byte maps to one printable code point, so a vocabulary can spell any byte string
// as text. Bytes 0x21-0x7E, 0xA1-0xAC and 0xAE-0xFF map to themselves; the other 68 bytes, in
// ascending order, map to U+0100, U+0101, ... (space -> U+0120 "Ġ", LF -> U+010A "Ċ").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fluoro::tok {

// Appends the byte-level spelling of the raw bytes `raw` to `out`.
void byte_level_encode(std::string_view raw, std::string& out);

// The byte-level spelling (1-2 UTF-8 bytes) of one byte.
std::string_view byte_level_char(uint8_t byte);

// Appends the bytes spelled by byte-level text `text` to `out`. A character outside the alphabet
// (possible only in a malformed vocabulary) is copied through as its own UTF-8.
void byte_level_decode(std::string_view text, std::string& out);

}  // namespace fluoro::tok
