// Reordered segments: two prompts that part at some point but, from there, hold the same lines or
// the same JSON objects (tool definitions, say) in another order. Found by walking both segment
// lists in step until they hold the same multiset; the region up to there is "the same content,
// reordered", and its sorted segments name that content whatever the order.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fluoro::app {

enum class SegmentKind { Lines, JsonObjects };

struct Segment {
    size_t begin = 0, end = 0;  // bytes of the segment's own text
};

struct Reordering {
    SegmentKind kind = SegmentKind::Lines;
    // Per prompt: the region's bytes [begin, end) and its segments in order; a segment's slot is
    // from its begin to the next one's (separators included), the last one's to region end.
    size_t a_begin = 0, a_end = 0, b_begin = 0, b_end = 0;
    std::vector<Segment> a_segments, b_segments;
};

// a and b agree before bytes a_at and b_at and differ there. Looks for a reordering starting at
// the JSON object (at any nesting level) or the line that holds the difference; at most
// max_segments segments are compared.
std::optional<Reordering> find_reordering(std::string_view a, size_t a_at, std::string_view b,
                                          size_t b_at, size_t max_segments = 256);

// The segments' texts sorted and joined: the same for both prompts of a Reordering, and for any
// other prompt holding the same segments in any order.
std::string canonical_key(std::string_view text, const std::vector<Segment>& segments);

}  // namespace fluoro::app
