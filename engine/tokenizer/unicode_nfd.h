// Unicode canonical decomposition (NFD) of text, for WordPiece's accent stripping (BERT's
// normalizer: NFD, then combining marks dropped). The table is generated from Python's
// unicodedata by scripts/gen_unicode_nfd.py (unicode_nfd_table.cpp); Hangul syllables decompose
// by the Unicode formula. Canonical reordering of combining marks is not done: the marks are
// dropped right after, so their order does not matter here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fluoro::tok {

// Appends the full canonical decomposition of `c` to `out` (c itself when it has none).
void append_nfd(char32_t c, std::u32string& out);

namespace detail {
struct NfdRow {
    char32_t cp;
    char32_t to[4];  // 0-padded
};
extern const NfdRow kNfdRows[];
extern const size_t kNfdRowCount;
}  // namespace detail

}  // namespace fluoro::tok
