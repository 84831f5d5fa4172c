#include "tokenizer/unicode_nfd.h"

#include <algorithm>

namespace fluoro::tok {

void append_nfd(char32_t c, std::u32string& out) {
    // Hangul syllables: L V (T), by the formula of Unicode's chapter 3.12.
    constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
    constexpr char32_t kVCount = 21, kTCount = 28, kSCount = 11172;
    if (c >= kSBase && c < kSBase + kSCount) {
        const char32_t s = c - kSBase;
        out += char32_t(kLBase + s / (kVCount * kTCount));
        out += char32_t(kVBase + (s % (kVCount * kTCount)) / kTCount);
        if (s % kTCount != 0) out += char32_t(kTBase + s % kTCount);
        return;
    }
    const detail::NfdRow* end = detail::kNfdRows + detail::kNfdRowCount;
    const detail::NfdRow* row = std::lower_bound(
        detail::kNfdRows, end, c, [](const detail::NfdRow& r, char32_t v) { return r.cp < v; });
    if (row == end || row->cp != c) {
        out += c;
        return;
    }
    for (char32_t d : row->to)  // already fully decomposed (NFD is recursive; the table holds
        if (d != 0) out += d;   // the result)
}

}  // namespace fluoro::tok
