// The what-if rewrite of a prompt: its volatile values moved to the end (stable content first)
// and each reordered region replaced by the tokens of one representative ordering of the same
// segments (the first request's), as if every request listed them in that one fixed order. It
// works on token ids, so it is an estimate: re-tokenizing the rewritten text could split a few
// tokens differently.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "advisor/breaker_scan.h"

namespace fluoro::app {

struct PromptMarks {
    std::vector<TokenRange> moved;  // volatile values, in any order, may overlap
    struct Region {
        TokenRange range;
        std::string key;                   // canonical_key() of its segments
        std::vector<int32_t> replacement;  // the representative ordering's tokens
    };
    std::vector<Region> reordered;

    bool empty() const { return moved.empty() && reordered.empty(); }
};

// The prompt rewritten. Moved tokens go to the end in their original order. A region is
// replaced unless it overlaps an earlier-starting region or a moved value (then it stays as it
// is) or has no replacement.
std::vector<int32_t> stable_first(std::span<const int32_t> ids, const PromptMarks& marks);

}  // namespace fluoro::app
