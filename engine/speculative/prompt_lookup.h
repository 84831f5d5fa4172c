// Prompt-lookup drafting (Saxena, "prompt lookup decoding"; llama.cpp's ngram drafter): when the
// last n tokens of the context occurred earlier in it, propose the tokens that followed that
// occurrence. Costs no model at all, and wins on input-grounded text (edits, quotes, code).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "speculative/drafter.h"

namespace fluoro::spec {

struct PromptLookupOptions {
    int32_t max_ngram = 3;  // try the longest suffix first ...
    int32_t min_ngram = 1;  // ... down to this length
    int32_t max_draft = 6;  // tokens proposed at most (SpeculativeSettings::max_draft)
    // ... and at most this many when only the last token matched: one token of context is weak
    // evidence of a copy, and a long draft after it is mostly rejected at a verification cost
    // that grows with its length. Replaying SmolLM2's greedy outputs at measured verify costs
    // (scripts/spec/replay_lookup.py --unigram 1 6, default draft length 6, three runs), 1
    // instead of 6 raises the expected copy-set speedup 1.70 -> 1.79x, 1.54 -> 1.68x,
    // 2.06 -> 2.17x, summaries and chat a little, and a second copy set not in the bench
    // 1.48 -> 1.52x (docs/PERFORMANCE.md, "draft length").
    int32_t max_draft_unigram = 1;
};

// The draft for `context` (prompt + generated tokens, oldest first): for n = max_ngram down to
// min_ngram, the most recent earlier occurrence of the context's last n tokens, and up to
// max_draft tokens that followed it (max_draft_unigram for n = 1). Empty when nothing matches.
// Throws fluoro::Error for options out of range (min_ngram < 1, max_ngram < min_ngram,
// max_draft < 1, max_draft_unigram < 1).
std::vector<int32_t> prompt_lookup_draft(std::span<const int32_t> context,
                                         const PromptLookupOptions& opt);

// The drafter: each proposed token is a point mass (q = 1), so speculative sampling accepts it with
// the target's probability of it and otherwise samples the target without it.
class PromptLookupDrafter final : public Drafter {
  public:
    explicit PromptLookupDrafter(PromptLookupOptions opt = {});
    std::string_view name() const override { return "prompt_lookup"; }
    void propose(std::span<const int32_t> context, int32_t max_n, const SamplingParams& params,
                 Draft& out) override;

  private:
    PromptLookupOptions opt_;
};

}  // namespace fluoro::spec
