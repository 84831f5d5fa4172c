#include "advisor/breaker_scan.h"

#include <algorithm>
#include <optional>

namespace fluoro::app {
namespace {

int64_t size_of(const PromptView& p) {
    return int64_t(p.ids.size());
}

bool has_text(const PromptView& p) {
    return p.text && p.text->has_text();
}

// Agreeing tokens from (ia, ib), counting at most `limit`.
int64_t agree(const PromptView& a, int64_t ia, const PromptView& b, int64_t ib,
              int64_t limit = INT64_MAX) {
    int64_t n = 0;
    while (n < limit && ia + n < size_of(a) && ib + n < size_of(b) &&
           a.ids[size_t(ia + n)] == b.ids[size_t(ib + n)])
        ++n;
    return n;
}

// The nearest (fewest skipped tokens in all) point after (pa, pb) where the prompts agree for
// min_rematch tokens: how many tokens each side skips.
std::optional<std::pair<int64_t, int64_t>> resync(const PromptView& a, int64_t pa,
                                                  const PromptView& b, int64_t pb,
                                                  const ScanOptions& opt) {
    for (int64_t d = 1; d <= 2 * opt.window; ++d) {
        for (int64_t x = std::max<int64_t>(0, d - opt.window); x <= std::min(d, opt.window); ++x) {
            const int64_t y = d - x;
            if (pa + x >= size_of(a) || pb + y >= size_of(b)) continue;
            if (agree(a, pa + x, b, pb + y, opt.min_rematch) >= opt.min_rematch)
                return std::pair{x, y};
        }
    }
    return std::nullopt;
}

// Tokens [first, last) widened to the whole value their text is part of.
TokenRange widen_tokens(const PromptView& p, int64_t first, int64_t last) {
    if (!has_text(p)) return {first, last};
    const PromptText& t = *p.text;
    const auto [cb, ce] = widen_value(t.text(), size_t(t.offset(first)), size_t(t.offset(last)));
    TokenRange r{t.token_at(int64_t(cb)), ce > cb ? t.token_at(int64_t(ce) - 1) + 1 : first};
    // The text may go on past the view (a prompt's view of its cached sequence): stay inside.
    return {std::min(r.first, first), std::min(std::max(r.second, last), size_of(p))};
}

PairBreaker volatile_breaker(const PromptView& a, int64_t pa, const PromptView& b, int64_t pb,
                             int64_t x, int64_t y) {
    PairBreaker br;
    br.kind = BreakerKind::Volatile;
    br.at = pa;
    br.other_at = pb;
    br.range = widen_tokens(a, pa, pa + x);
    br.other_range = widen_tokens(b, pb, pb + y);
    if (has_text(a) && has_text(b))
        br.span = classify_span(a.text->slice(br.range.first, br.range.second),
                                b.text->slice(br.other_range.first, br.other_range.second));
    return br;
}

std::optional<PairBreaker> reorder_breaker(const PromptView& a, int64_t pa, const PromptView& b,
                                           int64_t pb) {
    if (!has_text(a) || !has_text(b)) return std::nullopt;
    const PromptText &ta = *a.text, &tb = *b.text;
    const auto r =
        find_reordering(ta.text(), size_t(ta.offset(pa)), tb.text(), size_t(tb.offset(pb)));
    if (!r) return std::nullopt;
    PairBreaker br;
    br.kind = BreakerKind::Reordered;
    br.at = pa;
    br.other_at = pb;
    br.segment_kind = r->kind;
    br.segments = int64_t(r->a_segments.size());
    br.range = {ta.token_from(int64_t(r->a_begin)), ta.token_from(int64_t(r->a_end))};
    br.other_range = {tb.token_from(int64_t(r->b_begin)), tb.token_from(int64_t(r->b_end))};
    if (br.range.first > pa || br.other_range.first > pb) return std::nullopt;  // mid-token start
    br.canonical_key = canonical_key(ta.text(), r->a_segments);
    return br;
}

}  // namespace

std::vector<PairBreaker> scan_pair(const PromptView& a, const PromptView& b, int64_t diverge,
                                   const ScanOptions& opt) {
    std::vector<PairBreaker> out;
    int64_t pa = diverge, pb = diverge;
    while (int64_t(out.size()) < opt.max_breakers && pa < size_of(a) && pb < size_of(b)) {
        PairBreaker br;
        int64_t next_a = 0, next_b = 0;
        if (auto r = reorder_breaker(a, pa, b, pb)) {
            br = std::move(*r);
            next_a = br.range.second;
            next_b = br.other_range.second;
        } else if (const auto skip = resync(a, pa, b, pb, opt)) {
            br = volatile_breaker(a, pa, b, pb, skip->first, skip->second);
            next_a = pa + skip->first;
            next_b = pb + skip->second;
        } else {
            break;
        }
        br.matched_after = agree(a, next_a, b, next_b);
        const bool counts =
            br.kind == BreakerKind::Reordered || br.matched_after >= opt.min_rematch;
        if (!counts) break;
        out.push_back(std::move(br));
        pa = next_a + out.back().matched_after;
        pb = next_b + out.back().matched_after;
    }
    return out;
}

}  // namespace fluoro::app
