#include "chat/python_strip.h"

#include <cstdint>

namespace fluoro {
namespace {

// Decodes the code point of UTF-8 `s` starting at byte i into cp, returning its length (0 for
// an invalid or truncated sequence).
size_t decode_at(std::string_view s, size_t i, char32_t& cp) {
    const auto b0 = static_cast<uint8_t>(s[i]);
    size_t len = 0;
    if (b0 < 0x80) {
        cp = b0;
        return 1;
    }
    if ((b0 & 0xE0) == 0xC0) {
        len = 2;
        cp = b0 & 0x1F;
    } else if ((b0 & 0xF0) == 0xE0) {
        len = 3;
        cp = b0 & 0x0F;
    } else if ((b0 & 0xF8) == 0xF0) {
        len = 4;
        cp = b0 & 0x07;
    } else {
        return 0;
    }
    if (i + len > s.size()) return 0;
    for (size_t k = 1; k < len; ++k) {
        const auto b = static_cast<uint8_t>(s[i + k]);
        if ((b & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (b & 0x3F);
    }
    constexpr char32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
    return cp >= kMinForLength[len] ? len : 0;  // an overlong form is not a valid code point
}

}  // namespace

bool is_python_space(char32_t cp) {
    if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F);
    switch (cp) {
        case 0x85:
        case 0xA0:
        case 0x1680:
        case 0x2028:
        case 0x2029:
        case 0x202F:
        case 0x205F:
        case 0x3000:
            return true;
        default:
            return cp >= 0x2000 && cp <= 0x200A;
    }
}

std::string_view python_strip(std::string_view text) {
    size_t begin = 0;
    while (begin < text.size()) {
        char32_t cp = 0;
        const size_t len = decode_at(text, begin, cp);
        if (len == 0 || !is_python_space(cp)) break;
        begin += len;
    }
    size_t end = text.size();
    while (end > begin) {
        // Step back over continuation bytes to the start of the last code point (at most 3).
        size_t start = end - 1;
        while (start > begin && end - start < 4 &&
               (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80)
            --start;
        char32_t cp = 0;
        const size_t len = decode_at(text, start, cp);
        if (len != end - start || !is_python_space(cp)) break;
        end = start;
    }
    return text.substr(begin, end - begin);
}

}  // namespace fluoro
