#include "runtime/prefix_event.h"

#include <string>
#include <vector>

#include "kv/prefix_cache.h"
#include "tokenizer/tokenizer.h"

namespace fluoro {
namespace {

// The prefix cache's tree as the event carries it: texts instead of ids (long edges shortened),
// bytes from the KV's bytes per token.
std::vector<PrefixTreeNode> prefix_tree(const std::vector<PrefixCache::TreeNode>& nodes,
                                        const tok::Tokenizer& tk, int64_t bytes_per_token) {
    std::vector<PrefixTreeNode> out;
    out.reserve(nodes.size());
    for (const PrefixCache::TreeNode& n : nodes) {
        PrefixTreeNode t;
        t.parent = n.parent;
        t.depth = n.depth;
        t.edge_tokens = int64_t(n.edge.size());
        const auto text = [&](size_t from, size_t to) {
            std::string s;
            for (size_t i = from; i < to; ++i) s += tk.token_to_piece(n.edge[i], true);
            return s;
        };
        t.text = n.edge.size() <= 24 ? text(0, n.edge.size())
                                     : text(0, 16) + " … " + text(n.edge.size() - 8, n.edge.size());
        t.slot = n.slot;
        t.recency = n.recency;
        t.entries = n.entries;
        t.matched = n.matched;
        t.bytes = t.edge_tokens * bytes_per_token;
        out.push_back(std::move(t));
    }
    return out;
}

}  // namespace

PrefixCacheEvent make_prefix_event(const PrefillStats& p, uint64_t run, int64_t prompt_tokens,
                                   std::span<const int32_t> prompt, int64_t t_ns,
                                   const tok::Tokenizer& tokenizer, const PrefixCache* cache,
                                   int64_t bytes_per_token) {
    PrefixCacheEvent e;
    e.run = run;
    e.prompt_tokens = prompt_tokens;
    e.cached_tokens = p.reused_tokens;
    e.computed_tokens = prompt_tokens - p.reused_tokens;
    e.evicted_tokens = p.evicted_tokens;
    e.t_ns = t_ns;
    e.source = p.reused_tokens == 0  ? "none"
               : p.from_prefix_cache ? "prefix_cache"
                                     : "conversation";
    e.diverge_at = p.diverge_at;
    e.diverge_prompt_token = p.diverge_prompt_token;
    e.diverge_cached_token = p.diverge_cached_token;
    if (p.diverge_cached_token >= 0)
        e.diverge_cached_piece = tokenizer.token_to_piece(p.diverge_cached_token, true);
    e.evicted_entries = p.evicted_entries;
    if (cache) {
        const PrefixCache::Stats st = cache->stats();
        e.cache_entries = st.entries;
        e.cache_tokens = st.cached_tokens;
        e.tree = prefix_tree(cache->tree(prompt), tokenizer, bytes_per_token);
    }
    return e;
}

}  // namespace fluoro
