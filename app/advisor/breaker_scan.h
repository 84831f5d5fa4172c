// Cache breakers between two prompts: after the point where they part, do they agree again? A
// short changing value (a timestamp, an id) followed by a long run of agreeing tokens is a
// volatile span; the same lines or JSON objects in another order is a reordering. Either one
// costs every agreeing token after it, since a prefix cache reuses only an unbroken prefix. The
// scan goes on past each breaker to find the next, until the prompts stop agreeing.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "advisor/prompt_text.h"
#include "advisor/segment_reorder.h"
#include "advisor/volatile_span.h"

namespace fluoro::app {

struct PromptView {
    std::span<const int32_t> ids;
    const PromptText* text = nullptr;  // may be without text: then no widening or reorderings
};

enum class BreakerKind { Volatile, Reordered };

using TokenRange = std::pair<int64_t, int64_t>;  // [first, last)

struct PairBreaker {
    BreakerKind kind = BreakerKind::Volatile;
    SpanKind span = SpanKind::Other;                // Volatile: what the value looks like
    int64_t at = 0, other_at = 0;                   // first differing token in each prompt
    TokenRange range{0, 0}, other_range{0, 0};      // the whole value / the reordered region
    int64_t matched_after = 0;                      // agreeing tokens right after it
    SegmentKind segment_kind = SegmentKind::Lines;  // Reordered
    int64_t segments = 0;
    std::string canonical_key;  // Reordered: the region's segments sorted (canonical_key())
};

struct ScanOptions {
    int64_t min_rematch = 8;   // agreeing tokens needed after a span for it to count
    int64_t window = 64;       // longest volatile span looked for, in tokens per prompt
    int64_t max_breakers = 8;  // per pair
};

// a and b agree on their first `diverge` tokens and differ at that one.
std::vector<PairBreaker> scan_pair(const PromptView& a, const PromptView& b, int64_t diverge,
                                   const ScanOptions& opt = {});

}  // namespace fluoro::app
