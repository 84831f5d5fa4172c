#include "tokenizer/utf8.h"

namespace fluoro::tok::utf8 {

namespace {

// Allowed range of the second byte for each lead byte (Unicode Table 3-7); later continuation
// bytes are always 0x80..0xBF.
struct LeadInfo {
    size_t length;  // 0: not a lead byte
    unsigned char lo;
    unsigned char hi;
};

LeadInfo lead_info(unsigned char b) {
    if (b < 0x80) return {1, 0, 0};
    if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
    if (b == 0xE0) return {3, 0xA0, 0xBF};
    if (b == 0xED) return {3, 0x80, 0x9F};
    if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
    if (b == 0xF0) return {4, 0x90, 0xBF};
    if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
    if (b == 0xF4) return {4, 0x80, 0x8F};
    return {0, 0, 0};
}

}  // namespace

size_t sequence_length(unsigned char b) {
    const size_t n = lead_info(b).length;
    return n == 0 ? 1 : n;
}

SeqStatus classify(std::string_view s, size_t i, size_t& len) {
    const auto lead = static_cast<unsigned char>(s[i]);
    const LeadInfo info = lead_info(lead);
    if (info.length == 0) {
        len = 1;
        return SeqStatus::Invalid;
    }
    for (size_t k = 1; k < info.length; ++k) {
        if (i + k >= s.size()) {
            len = k;
            return SeqStatus::Incomplete;
        }
        const auto c = static_cast<unsigned char>(s[i + k]);
        const unsigned char lo = k == 1 ? info.lo : 0x80;
        const unsigned char hi = k == 1 ? info.hi : 0xBF;
        if (c < lo || c > hi) {
            len = k;
            return SeqStatus::Invalid;
        }
    }
    len = info.length;
    return SeqStatus::Complete;
}

std::optional<size_t> find_invalid(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        if (static_cast<unsigned char>(s[i]) < 0x80) {  // fast path for ASCII
            ++i;
            continue;
        }
        size_t len = 0;
        if (classify(s, i, len) != SeqStatus::Complete) return i;
        i += len;
    }
    return std::nullopt;
}

void append(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

char32_t decode(std::string_view s, size_t& i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    const size_t n = sequence_length(b0);
    if (n == 1 || i + n > s.size()) {
        ++i;
        return b0;
    }
    char32_t cp = b0 & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    i += n;
    return cp;
}

}  // namespace fluoro::tok::utf8
