// What recorded prompts share: the prefixes at the branch points of the prompt trie, each with how
// many requests start with it and what caching it once saves, ranked by that saving. A prefix is
// left out when a longer one is held by the same requests (it says nothing more).
#pragma once

#include <span>
#include <vector>

#include "advisor/prompt_advisor.h"
#include "advisor/prompt_trie.h"

namespace fluoro::app {

// trie holds every request's ids; texts[i] is request i's text.
std::vector<SharedPrefix> shared_prefixes(const PromptTrie& trie, std::span<const PromptText> texts,
                                          const AdvisorOptions& opt);

}  // namespace fluoro::app
