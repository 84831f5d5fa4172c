#include "speculative/prompt_lookup.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace fluoro::spec {

std::vector<int32_t> prompt_lookup_draft(std::span<const int32_t> context,
                                         const PromptLookupOptions& opt) {
    if (opt.min_ngram < 1 || opt.max_ngram < opt.min_ngram || opt.max_draft < 1 ||
        opt.max_draft_unigram < 1)
        throw Error("prompt lookup: need 1 <= min_ngram (" + std::to_string(opt.min_ngram) +
                    ") <= max_ngram (" + std::to_string(opt.max_ngram) + "), max_draft (" +
                    std::to_string(opt.max_draft) + ") >= 1 and max_draft_unigram (" +
                    std::to_string(opt.max_draft_unigram) + ") >= 1");
    const size_t len = context.size();
    for (size_t n = size_t(opt.max_ngram); n >= size_t(opt.min_ngram); --n) {
        if (n >= len) continue;  // need the suffix plus at least one earlier token
        const auto suffix = context.subspan(len - n);
        // Most recent occurrence first: start positions s < len - n, scanning backwards.
        for (size_t s = len - n; s-- > 0;) {
            if (!std::equal(suffix.begin(), suffix.end(), context.begin() + ptrdiff_t(s))) continue;
            const size_t from = s + n;  // < len: the occurrence is followed by something
            const size_t most =
                size_t(n == 1 ? std::min(opt.max_draft, opt.max_draft_unigram) : opt.max_draft);
            const size_t count = std::min(most, len - from);
            return {context.begin() + ptrdiff_t(from), context.begin() + ptrdiff_t(from + count)};
        }
    }
    return {};
}

PromptLookupDrafter::PromptLookupDrafter(PromptLookupOptions opt) : opt_(opt) {
    prompt_lookup_draft({}, opt_);  // validates the options
}

void PromptLookupDrafter::propose(std::span<const int32_t> context, int32_t max_n,
                                  const SamplingParams&, Draft& out) {
    out.clear();
    if (max_n < 1) return;
    PromptLookupOptions o = opt_;
    o.max_draft = std::min(o.max_draft, max_n);
    out.ids = prompt_lookup_draft(context, o);
    for (const int32_t id : out.ids) out.q.push_back(TokenDist::point(id));
}

}  // namespace fluoro::spec
