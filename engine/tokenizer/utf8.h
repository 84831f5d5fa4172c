// UTF-8 helpers for the tokenizer: strict validation (encode() reports the offset of the first
// bad byte), character lengths for splitting text into symbols, code point encode/decode for the
// byte-level alphabet, and sequence classification for the streaming decoder, which must hold an
// incomplete character back until its last byte arrives.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace fluoro::tok::utf8 {

// Length of the sequence announced by lead byte `b`: 1..4, or 1 for a byte that cannot start a
// sequence (so a walker over arbitrary bytes always advances).
size_t sequence_length(unsigned char b);

// Offset of the first byte that does not begin a well-formed sequence (overlong forms,
// surrogates, code points above U+10FFFF and truncated sequences are ill-formed), or nullopt.
std::optional<size_t> find_invalid(std::string_view s);

// Appends the UTF-8 encoding of `cp` (must be a Unicode scalar value).
void append(std::string& out, char32_t cp);

// Decodes the well-formed sequence starting at s[i] and advances i past it. Only for text already
// validated; a malformed byte decodes as itself (one byte) rather than reading out of bounds.
char32_t decode(std::string_view s, size_t& i);

enum class SeqStatus { Complete, Incomplete, Invalid };

// Classifies the sequence at s[i]. Complete: `len` is its length. Incomplete: s ends inside a
// sequence that could still become well-formed. Invalid: `len` is the length of the maximal
// ill-formed subpart (what one U+FFFD replaces, per Unicode's recommended practice).
SeqStatus classify(std::string_view s, size_t i, size_t& len);

}  // namespace fluoro::tok::utf8
