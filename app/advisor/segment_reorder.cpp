#include "advisor/segment_reorder.h"

#include <algorithm>
#include <map>

namespace fluoro::app {
namespace {

constexpr size_t npos = std::string_view::npos;

// Positions of the '{' and '[' still open at byte `at`, outermost first. Quotes count only inside
// brackets, where they are JSON strings (outside they are prose).
std::vector<size_t> open_brackets(std::string_view t, size_t at) {
    std::vector<size_t> stack;
    bool in_string = false;
    for (size_t i = 0; i < at && i < t.size(); ++i) {
        const char c = t[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
        } else if (c == '"' && !stack.empty()) {
            in_string = true;
        } else if (c == '{' || c == '[') {
            stack.push_back(i);
        } else if ((c == '}' || c == ']') && !stack.empty()) {
            stack.pop_back();
        }
    }
    return stack;
}

// End (one past the '}') of the object opening at `open`, or npos when it never closes.
size_t object_end(std::string_view t, size_t open) {
    int depth = 0;
    bool in_string = false;
    for (size_t i = open; i < t.size(); ++i) {
        const char c = t[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            ++depth;
        } else if (c == '}' || c == ']') {
            if (--depth == 0) return i + 1;
        }
    }
    return npos;
}

// Consecutive objects from `start`, separated by whitespace and commas.
std::vector<Segment> sibling_objects(std::string_view t, size_t start, size_t max) {
    std::vector<Segment> out;
    size_t pos = start;
    while (pos < t.size() && t[pos] == '{' && out.size() < max) {
        const size_t end = object_end(t, pos);
        if (end == npos) break;
        out.push_back({pos, end});
        pos = t.find_first_not_of(" \t\r\n,", end);
        if (pos == npos) break;
    }
    return out;
}

bool is_turn_marker(std::string_view t, size_t i) {
    const std::string_view rest = t.substr(i);
    return rest.starts_with("<|") || rest.starts_with("<start_of_turn>") ||
           rest.starts_with("<end_of_turn>");
}

// Lines from `start` (a chat template's turn marker also starts a new segment, so the last line
// of a message compares equal to the same line elsewhere).
std::vector<Segment> lines_from(std::string_view t, size_t start, size_t max) {
    std::vector<Segment> out;
    size_t begin = start;
    for (size_t i = start; i <= t.size() && out.size() < max; ++i) {
        if (i == t.size() || t[i] == '\n') {
            out.push_back({begin, i});
            begin = i + 1;
            if (i == t.size()) break;
        } else if (i > begin && is_turn_marker(t, i)) {
            out.push_back({begin, i});
            begin = i;
        }
    }
    return out;
}

std::string_view text_of(std::string_view t, const Segment& s) {
    return t.substr(s.begin, s.end - s.begin);
}

// The smallest k >= 2 such that a's and b's first k segments are the same multiset in another
// order (0 when there is none).
size_t same_multiset_prefix(std::string_view a, const std::vector<Segment>& as, std::string_view b,
                            const std::vector<Segment>& bs) {
    std::map<std::string_view, int64_t> balance;
    int64_t nonzero = 0;
    const auto bump = [&](std::string_view key, int64_t by) {
        int64_t& v = balance[key];
        if (v == 0) ++nonzero;
        v += by;
        if (v == 0) --nonzero;
    };
    bool reordered = false;
    for (size_t k = 0; k < std::min(as.size(), bs.size()); ++k) {
        const std::string_view x = text_of(a, as[k]), y = text_of(b, bs[k]);
        if (x != y) reordered = true;
        bump(x, +1);
        bump(y, -1);
        if (nonzero == 0 && k >= 1 && reordered) return k + 1;
    }
    return 0;
}

// Both prompts' regions from their starts (the same text before the difference).
std::optional<Reordering> compare_from(SegmentKind kind, std::string_view a, size_t a_start,
                                       std::string_view b, size_t b_start, size_t max) {
    Reordering r;
    r.kind = kind;
    r.a_segments =
        kind == SegmentKind::Lines ? lines_from(a, a_start, max) : sibling_objects(a, a_start, max);
    r.b_segments =
        kind == SegmentKind::Lines ? lines_from(b, b_start, max) : sibling_objects(b, b_start, max);
    const size_t k = same_multiset_prefix(a, r.a_segments, b, r.b_segments);
    if (k == 0) return std::nullopt;
    r.a_segments.resize(k);
    r.b_segments.resize(k);
    r.a_begin = a_start;
    r.b_begin = b_start;
    r.a_end = r.a_segments.back().end;
    r.b_end = r.b_segments.back().end;
    return r;
}

// b's byte matching a's `a_pos` (before the difference), or npos when the texts do not agree
// from there to the difference.
size_t align(std::string_view a, size_t a_at, size_t a_pos, std::string_view b, size_t b_at) {
    const size_t back = a_at - a_pos;
    if (back > b_at) return npos;
    const size_t b_pos = b_at - back;
    return a.substr(a_pos, back) == b.substr(b_pos, back) ? b_pos : npos;
}

}  // namespace

std::optional<Reordering> find_reordering(std::string_view a, size_t a_at, std::string_view b,
                                          size_t b_at, size_t max_segments) {
    if (a_at > a.size() || b_at > b.size()) return std::nullopt;
    const std::vector<size_t> open = open_brackets(a, a_at);
    for (size_t level = open.size(); level-- > 0;) {  // innermost object first
        if (a[open[level]] != '{') continue;
        if (level > 0 && a[open[level - 1]] != '[') continue;  // siblings live in arrays
        const size_t b_start = align(a, a_at, open[level], b, b_at);
        if (b_start == npos || b[b_start] != '{') continue;
        if (auto r =
                compare_from(SegmentKind::JsonObjects, a, open[level], b, b_start, max_segments))
            return r;
    }
    const size_t nl = a_at == 0 ? npos : a.rfind('\n', a_at - 1);
    const size_t line = nl == npos ? 0 : nl + 1;
    const size_t b_line = align(a, a_at, line, b, b_at);
    if (b_line == npos) return std::nullopt;
    return compare_from(SegmentKind::Lines, a, line, b, b_line, max_segments);
}

std::string canonical_key(std::string_view text, const std::vector<Segment>& segments) {
    std::vector<std::string_view> parts;
    for (const auto& seg : segments) parts.push_back(text_of(text, seg));
    std::sort(parts.begin(), parts.end());
    std::string key;
    for (const auto part : parts) {
        key += part;
        key += '\x1f';  // the unit separator: not in prompts' text
    }
    return key;
}

}  // namespace fluoro::app
