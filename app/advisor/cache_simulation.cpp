#include "advisor/cache_simulation.h"

#include <algorithm>

namespace fluoro::app {

std::string_view reuse_name(Reuse r) {
    switch (r) {
        case Reuse::Cold:
            return "cold";
        case Reuse::Diverges:
            return "diverges";
        case Reuse::Extends:
            return "extends";
        case Reuse::Repeats:
            return "repeats";
    }
    return "?";
}

double CacheSimulation::hit_rate() const {
    return prompt_tokens > 0 ? double(cached_tokens) / double(prompt_tokens) : 0.0;
}

double CacheSimulation::hit_rate_after_first() const {
    return prompt_tokens_after_first > 0
               ? double(cached_tokens_after_first) / double(prompt_tokens_after_first)
               : 0.0;
}

namespace {

RequestReuse reuse_of(const std::vector<int32_t>& seq, int64_t prompt_tokens,
                      const PromptTrie::Match& m, std::span<const std::vector<int32_t>> seqs) {
    RequestReuse r;
    r.prompt_tokens = prompt_tokens;
    r.shared_tokens = m.tokens;
    r.cached_tokens = std::max<int64_t>(0, std::min(m.tokens, r.prompt_tokens - 1));
    if (m.tokens == 0) return r;  // Cold
    r.source = m.source;
    const std::vector<int32_t>& src = seqs[size_t(m.source)];
    if (m.tokens == r.prompt_tokens) {
        r.reuse = Reuse::Repeats;
    } else if (m.tokens == int64_t(src.size())) {
        r.reuse = Reuse::Extends;
    } else {
        r.reuse = Reuse::Diverges;
        r.token = seq[size_t(m.tokens)];
        r.source_token = src[size_t(m.tokens)];
    }
    return r;
}

}  // namespace

CacheSimulation simulate_prefix_cache(PromptTrie& trie,
                                      std::span<const std::vector<int32_t>> sequences,
                                      std::span<const int64_t> prompt_tokens) {
    CacheSimulation sim;
    sim.requests.reserve(sequences.size());
    for (size_t i = 0; i < sequences.size(); ++i) {
        const int64_t n = prompt_tokens[i];
        const RequestReuse r =
            reuse_of(sequences[i], n, trie.longest_prefix(int64_t(i), n), sequences);
        trie.insert(int64_t(i));
        sim.prompt_tokens += r.prompt_tokens;
        sim.cached_tokens += r.cached_tokens;
        if (i > 0) {
            sim.prompt_tokens_after_first += r.prompt_tokens;
            sim.cached_tokens_after_first += r.cached_tokens;
        }
        sim.requests.push_back(r);
    }
    return sim;
}

CacheSimulation simulate_prefix_cache(std::span<const std::vector<int32_t>> prompts) {
    std::vector<int64_t> lengths;
    for (const auto& p : prompts) lengths.push_back(int64_t(p.size()));
    PromptTrie trie(prompts);
    return simulate_prefix_cache(trie, prompts, lengths);
}

}  // namespace fluoro::app
