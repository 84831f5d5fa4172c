// What a changing span of a prompt is, judged from its text: a timestamp, date or time; an id (a
// UUID, a long hex or mixed letters-and-digits token); a plain number (a counter); or other text.
// Two prompts usually differ in only a character or two of such a value (the seconds of a clock),
// so the span is first widened to the whole value around it.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>

namespace fluoro::app {

enum class SpanKind { Timestamp, Id, Number, Other };
std::string_view span_kind_name(SpanKind k);  // "timestamp", "id", "number", "other"

// [begin, end) of `text` widened, at most max_widen bytes on each side, over the characters a
// value is written with (letters, digits and - : _ . / +, and a space between two digits).
std::pair<size_t, size_t> widen_value(std::string_view text, size_t begin, size_t end,
                                      size_t max_widen = 48);

// The kind of a changing value, from its text on both sides (either may be empty): the most
// specific kind either side shows, in the order UUID/id-like, timestamp, id, number, other.
SpanKind classify_span(std::string_view a, std::string_view b);

}  // namespace fluoro::app
