#include "advisor/stable_first.h"

#include <algorithm>

namespace fluoro::app {

std::vector<int32_t> stable_first(std::span<const int32_t> ids, const PromptMarks& marks) {
    const int64_t n = int64_t(ids.size());
    std::vector<bool> moved(ids.size(), false);
    for (const auto& [first, last] : marks.moved)
        for (int64_t t = std::max<int64_t>(0, first); t < std::min(last, n); ++t)
            moved[size_t(t)] = true;

    std::vector<const PromptMarks::Region*> regions;
    for (const auto& r : marks.reordered) regions.push_back(&r);
    std::sort(regions.begin(), regions.end(),
              [](const auto* x, const auto* y) { return x->range.first < y->range.first; });

    std::vector<int32_t> out, tail;
    out.reserve(ids.size());
    const auto emit = [&](int64_t first, int64_t last) {
        for (int64_t t = std::max<int64_t>(0, first); t < std::min(last, n); ++t)
            (moved[size_t(t)] ? tail : out).push_back(ids[size_t(t)]);
    };
    const auto any_moved = [&](TokenRange r) {
        return std::any_of(moved.begin() + r.first, moved.begin() + r.second,
                           [](bool m) { return m; });
    };
    int64_t pos = 0;
    for (const auto* r : regions) {
        const TokenRange range = r->range;
        if (range.first < pos || range.second > n || range.first >= range.second) continue;
        if (r->replacement.empty() || any_moved(range)) continue;
        emit(pos, range.first);
        out.insert(out.end(), r->replacement.begin(), r->replacement.end());
        pos = range.second;
    }
    emit(pos, n);
    out.insert(out.end(), tail.begin(), tail.end());
    return out;
}

}  // namespace fluoro::app
