#include "advisor/prompt_trie.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace fluoro::app {

PromptTrie::PromptTrie(std::span<const std::vector<int32_t>> sequences) : seqs_(sequences) {
    nodes_.emplace_back();  // the root
    ends_here_.push_back(0);
}

PromptTrie::Match PromptTrie::longest_prefix(int64_t seq, int64_t max_tokens) const {
    const std::vector<int32_t>& t = seqs_[size_t(seq)];
    const int64_t n = std::min(int64_t(t.size()), max_tokens);
    Match m;
    int64_t node = 0, pos = 0;
    while (pos < n) {
        const auto it = nodes_[size_t(node)].children.find(t[size_t(pos)]);
        if (it == nodes_[size_t(node)].children.end()) break;
        const Node& c = nodes_[size_t(it->second)];
        int64_t k = 1;  // the first token is the child's key
        while (k < c.length && pos + k < n && label_token(c, k) == t[size_t(pos + k)]) ++k;
        pos += k;
        // Every sequence sharing more than the parent's depth on this path runs through c
        // (insert splits an edge where a sequence ends), so c's latest is the latest sharer.
        m.tokens = pos;
        m.source = c.last;
        if (k < c.length) break;
        node = it->second;
    }
    return m;
}

int64_t PromptTrie::split(int64_t node, int64_t at) {
    const int64_t mid = int64_t(nodes_.size());
    Node m;
    {
        const Node& old = nodes_[size_t(node)];
        m.seq = old.seq;
        m.begin = old.begin;
        m.length = at;
        m.depth = old.depth - old.length + at;
        m.count = old.count;
        m.last = old.last;
        m.parent = old.parent;
        m.children[label_token(old, at)] = node;
    }
    nodes_.push_back(std::move(m));
    ends_here_.push_back(0);
    Node& old = nodes_[size_t(node)];
    nodes_[size_t(old.parent)].children[label_token(old, 0)] = mid;
    old.begin += at;
    old.length -= at;
    old.parent = mid;
    return mid;
}

void PromptTrie::insert(int64_t seq) {
    const std::vector<int32_t>& t = seqs_[size_t(seq)];
    const int64_t n = int64_t(t.size());
    int64_t node = 0, pos = 0;
    nodes_[0].count++;
    nodes_[0].last = seq;
    while (pos < n) {
        const auto it = nodes_[size_t(node)].children.find(t[size_t(pos)]);
        if (it == nodes_[size_t(node)].children.end()) {
            Node leaf;
            leaf.seq = seq;
            leaf.begin = pos;
            leaf.length = n - pos;
            leaf.depth = n;
            leaf.count = 1;
            leaf.last = seq;
            leaf.parent = node;
            const int64_t id = int64_t(nodes_.size());
            nodes_[size_t(node)].children[t[size_t(pos)]] = id;
            nodes_.push_back(std::move(leaf));
            ends_here_.push_back(1);
            return;
        }
        int64_t child = it->second;
        const Node& c = nodes_[size_t(child)];
        int64_t k = 1;
        while (k < c.length && pos + k < n && label_token(c, k) == t[size_t(pos + k)]) ++k;
        if (k < c.length) child = split(child, k);
        nodes_[size_t(child)].count++;
        nodes_[size_t(child)].last = seq;
        pos += k;
        node = child;
    }
    ends_here_[size_t(node)]++;
}

void PromptTrie::check_invariants() const {
    const auto fail = [](size_t i, const std::string& what) {
        throw Error("prompt trie node " + std::to_string(i) + ": " + what);
    };
    for (size_t i = 0; i < nodes_.size(); ++i) {
        const Node& n = nodes_[i];
        int64_t below = ends_here_[i];
        for (const auto& [first, child] : n.children) {
            const Node& c = nodes_[size_t(child)];
            if (c.parent != int64_t(i)) fail(size_t(child), "parent link broken");
            if (c.length < 1) fail(size_t(child), "empty edge label");
            if (label_token(c, 0) != first) fail(size_t(child), "keyed by the wrong token");
            if (c.depth != n.depth + c.length) fail(size_t(child), "depth != parent + label");
            below += c.count;
        }
        if (below != n.count) fail(i, "count is not its ends plus its children's counts");
        if (i == 0) continue;
        if (n.children.size() < 2 && ends_here_[i] == 0) fail(i, "inner node without a reason");
        const std::vector<int32_t>& last = seqs_[size_t(n.last)];
        if (int64_t(last.size()) < n.depth) fail(i, "latest sequence shorter than the node");
        for (int64_t k = 0; k < n.length; ++k)
            if (last[size_t(n.depth - n.length + k)] != label_token(n, k))
                fail(i, "latest sequence does not hold the edge label");
    }
}

}  // namespace fluoro::app
