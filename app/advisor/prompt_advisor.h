// The prompt-order advisor: from recorded requests (their prompts' token ids and, when known, the
// tokens' text), what a prefix cache could reuse and what stops it. It replays the requests
// through an unbounded prefix cache (CacheSimulation), reports the prefixes they share, finds the
// cache breakers between each request and the earlier one it shares most with (a changing value
// early in the prompt, the same lines or tools in another order: breaker_scan.h), and estimates
// the hit rate with those fixed (stable content first: stable_first.h) by replaying the
// rewritten prompts. Pure analysis: no store, no engine, no I/O; `fluoro cache advise` and the
// tests feed it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "advisor/breaker_scan.h"
#include "advisor/cache_simulation.h"
#include "advisor/prompt_text.h"

namespace fluoro::app {

struct AdvisorRequest {
    std::string id;    // how reports name it: "run 12"
    std::string time;  // when it was made (ISO 8601); may be empty
    std::vector<int32_t> ids;
    std::vector<std::string> pieces;  // one per id, or none (then no text-based analysis)
    // The generated tokens that went through the model (a last one sampled at max_tokens was
    // not): the cache holds them too, so a conversation's next turn reuses the answer.
    std::vector<int32_t> output_ids;
    std::vector<std::string> output_pieces;  // one per output id, or none
    int64_t served_cached = -1;  // prompt tokens the engine served from its cache (-1: unknown)
};

struct AdvisorOptions {
    ScanOptions scan;
    int64_t max_shared = 5;         // shared prefixes reported
    int64_t min_shared_tokens = 4;  // shorter shared prefixes are not worth a line
    size_t preview_chars = 60;
};

struct SharedPrefix {
    int64_t tokens = 0;        // the prefix's length
    int64_t requests = 0;      // requests starting with it
    int64_t saved_tokens = 0;  // (requests - 1) * tokens: what caching it once saves
    int64_t example = -1;      // the latest request holding it (index)
    std::string head, tail;    // one-line previews of its start and its end
    struct Branch {
        std::string next;  // text of the first token after the prefix
        int64_t requests = 0;
    };
    std::vector<Branch> branches;  // where the requests part, most requests first (at most 4)
};

struct CacheBreaker {
    BreakerKind kind = BreakerKind::Volatile;
    SpanKind span = SpanKind::Other;  // Volatile
    SegmentKind segment_kind = SegmentKind::Lines;
    int64_t segments = 0;  // Reordered
    // Its first occurrence: the request, the earlier one it was compared with, where it starts.
    int64_t request = -1, source = -1;
    int64_t token = 0, tokens = 0;  // first token of the value / region, and its length
    MessageLocation location;       // of `token`
    std::string before, text, other_text, after;  // one-line previews (other: in the source)
    int64_t occurrences = 0;                      // request pairs it was found in
    int64_t matched_after = 0;  // agreeing tokens right after it, over all occurrences
    std::string suggestion;     // one line
};

struct WhatIf {
    // Always an estimate: the prompts are rewritten as token ids, not re-tokenized text.
    CacheSimulation simulation;
    int64_t moved_spans = 0, reordered_regions = 0, requests_rewritten = 0;
};

struct PromptAdvice {
    CacheSimulation recorded;  // in the recorded order, as recorded
    // Per request (parallel to recorded.requests): a few tokens of text from where it parts
    // from its source, on its side and on the source's (empty unless it Diverges).
    std::vector<std::pair<std::string, std::string>> divergence;
    std::vector<SharedPrefix> shared;    // most saved tokens first
    std::vector<CacheBreaker> breakers;  // most matched_after first
    WhatIf what_if;
};

PromptAdvice advise_prompt_order(std::span<const AdvisorRequest> requests,
                                 const AdvisorOptions& opt = {});

}  // namespace fluoro::app
