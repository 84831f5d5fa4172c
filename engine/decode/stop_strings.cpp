#include "decode/stop_strings.h"

#include <algorithm>

namespace fluoro {

std::optional<size_t> find_stop_string(std::string_view text, size_t from,
                                       std::span<const std::string> stops) {
    std::optional<size_t> best;
    for (const std::string& s : stops) {
        if (s.empty()) continue;
        const size_t start = from >= s.size() ? from - s.size() + 1 : 0;
        const size_t pos = text.find(s, start);
        if (pos != std::string_view::npos && (!best || pos < *best)) best = pos;
    }
    return best;
}

size_t releasable(std::string_view text, std::span<const std::string> stops) {
    if (const auto whole = find_stop_string(text, 0, stops)) return *whole;
    size_t keep = text.size();
    for (const std::string& s : stops) {
        // The longest proper prefix of s that text ends with.
        for (size_t n = std::min(s.size() - (s.empty() ? 0 : 1), text.size()); n > 0; --n) {
            if (text.substr(text.size() - n) == std::string_view(s).substr(0, n)) {
                keep = std::min(keep, text.size() - n);
                break;
            }
        }
    }
    return keep;
}

}  // namespace fluoro
