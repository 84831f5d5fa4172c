// Replays recorded requests, in order, through an unbounded prefix cache (PromptTrie): per prompt,
// the longest prefix any earlier request's cached sequence shares, which one, and where the two
// part; overall, the share of prompt tokens a cache that never evicts would have served. A
// request's cached sequence is its prompt and the tokens it generated (all that went through the
// model), as a conversation's next turn reuses the answer too. As the engine does, the last
// prompt token is always computed (its logits are needed), so at most length - 1 tokens of a
// prompt are cached.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "advisor/prompt_trie.h"

namespace fluoro::app {

enum class Reuse {
    Cold,      // nothing shared with any earlier prompt (or the first prompt)
    Diverges,  // shares a prefix, then both prompts go on differently
    Extends,   // the earlier sequence is a prefix of this prompt (a conversation's next turn)
    Repeats,   // this prompt is a prefix of (or equal to) the earlier sequence
};
std::string_view reuse_name(Reuse r);  // "cold", "diverges", "extends", "repeats"

struct RequestReuse {
    int64_t prompt_tokens = 0;
    int64_t shared_tokens = 0;  // longest common prefix with any earlier prompt
    int64_t cached_tokens = 0;  // min(shared_tokens, prompt_tokens - 1)
    int64_t source = -1;        // the latest earlier prompt sharing it (-1: none)
    Reuse reuse = Reuse::Cold;
    // Diverges: the first differing position is shared_tokens; the tokens there on both sides.
    int32_t token = -1, source_token = -1;
};

struct CacheSimulation {
    std::vector<RequestReuse> requests;  // in the prompts' order
    int64_t prompt_tokens = 0, cached_tokens = 0;
    // Without the first prompt, which no cache can serve: the rate a warm cache gives.
    int64_t prompt_tokens_after_first = 0, cached_tokens_after_first = 0;

    double hit_rate() const;              // cached / prompt tokens (0 when there are none)
    double hit_rate_after_first() const;  // the same without the first prompt
};

// sequences[i] is request i's cached sequence, whose first prompt_tokens[i] tokens are its
// prompt; `trie` must be over `sequences` and empty. Inserts every sequence, in order.
CacheSimulation simulate_prefix_cache(PromptTrie& trie,
                                      std::span<const std::vector<int32_t>> sequences,
                                      std::span<const int64_t> prompt_tokens);
// Prompts alone (nothing generated).
CacheSimulation simulate_prefix_cache(std::span<const std::vector<int32_t>> prompts);

}  // namespace fluoro::app
