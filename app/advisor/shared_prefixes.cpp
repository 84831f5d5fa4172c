#include "advisor/shared_prefixes.h"

#include <algorithm>

namespace fluoro::app {
namespace {

bool says_more_than_a_child(const PromptTrie& trie, const PromptTrie::Node& n) {
    for (const auto& [first, child] : n.children)
        if (trie.nodes()[size_t(child)].count == n.count) return false;
    return true;
}

std::vector<SharedPrefix::Branch> branches_of(const PromptTrie& trie, const PromptTrie::Node& n,
                                              std::span<const PromptText> texts,
                                              size_t preview_chars) {
    std::vector<SharedPrefix::Branch> out;
    for (const auto& [first, child] : n.children) {
        const PromptTrie::Node& c = trie.nodes()[size_t(child)];
        const PromptText& t = texts[size_t(c.seq)];
        out.push_back({one_line(t.slice(c.begin, c.begin + 1), preview_chars), c.count});
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const auto& x, const auto& y) { return x.requests > y.requests; });
    if (out.size() > 4) out.resize(4);
    return out;
}

}  // namespace

std::vector<SharedPrefix> shared_prefixes(const PromptTrie& trie, std::span<const PromptText> texts,
                                          const AdvisorOptions& opt) {
    std::vector<SharedPrefix> out;
    const auto& nodes = trie.nodes();
    for (size_t i = 1; i < nodes.size(); ++i) {
        const PromptTrie::Node& n = nodes[i];
        if (n.count < 2 || n.depth < opt.min_shared_tokens) continue;
        if (!says_more_than_a_child(trie, n)) continue;
        SharedPrefix p;
        p.tokens = n.depth;
        p.requests = n.count;
        p.saved_tokens = (n.count - 1) * n.depth;
        p.example = n.last;
        const std::string text = texts[size_t(n.last)].slice(0, n.depth);
        p.head = one_line(text, opt.preview_chars / 2);
        p.tail = one_line(text, opt.preview_chars / 2, true);
        p.branches = branches_of(trie, n, texts, 24);
        out.push_back(std::move(p));
    }
    std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
        return x.saved_tokens != y.saved_tokens ? x.saved_tokens > y.saved_tokens
                                                : x.tokens > y.tokens;
    });
    if (int64_t(out.size()) > opt.max_shared) out.resize(size_t(opt.max_shared));
    return out;
}

}  // namespace fluoro::app
