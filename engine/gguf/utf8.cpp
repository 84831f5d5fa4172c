#include "gguf/utf8.h"

#include <cstdint>

namespace fluoro::gguf {
namespace {

bool is_continuation(uint8_t b) {
    return (b & 0xC0) == 0x80;
}

// Length of the well-formed sequence starting at s[i], or 0 (Unicode Table 3-7).
size_t sequence_length(std::string_view s, size_t i) {
    const auto at = [&](size_t k) { return static_cast<uint8_t>(s[i + k]); };
    const uint8_t b0 = at(0);
    if (b0 < 0x80) return 1;
    const size_t left = s.size() - i;
    if (b0 >= 0xC2 && b0 <= 0xDF) return left >= 2 && is_continuation(at(1)) ? 2 : 0;
    if (b0 >= 0xE0 && b0 <= 0xEF) {
        if (left < 3 || !is_continuation(at(1)) || !is_continuation(at(2))) return 0;
        if (b0 == 0xE0 && at(1) < 0xA0) return 0;  // overlong
        if (b0 == 0xED && at(1) > 0x9F) return 0;  // surrogate
        return 3;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
        if (left < 4 || !is_continuation(at(1)) || !is_continuation(at(2)) ||
            !is_continuation(at(3)))
            return 0;
        if (b0 == 0xF0 && at(1) < 0x90) return 0;  // overlong
        if (b0 == 0xF4 && at(1) > 0x8F) return 0;  // above U+10FFFF
        return 4;
    }
    return 0;
}

}  // namespace

std::optional<size_t> find_invalid_utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        // Fast path for ASCII, the common case in keys and most vocabularies.
        if (static_cast<uint8_t>(s[i]) < 0x80) {
            ++i;
            continue;
        }
        const size_t n = sequence_length(s, i);
        if (n == 0) return i;
        i += n;
    }
    return std::nullopt;
}

}  // namespace fluoro::gguf
