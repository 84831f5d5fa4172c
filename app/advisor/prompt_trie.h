// A radix tree over the token ids of recorded prompts, for the prompt-order advisor: an unbounded
// model of the engine's prefix cache (engine/kv/prefix_cache.h) that never evicts. Edges are
// runs of tokens referenced in the inserted sequences (nothing is copied), so the tree has at
// most two nodes per sequence and a lookup or insert costs O(prompt length). Each node knows how
// many sequences passed through it and the latest one that did, which is what "the longest prefix
// any earlier request holds, and whose" needs.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace fluoro::app {

class PromptTrie {
  public:
    // The sequences are referenced, not copied: they must outlive the trie and stay unchanged.
    explicit PromptTrie(std::span<const std::vector<int32_t>> sequences);

    struct Match {
        int64_t tokens = 0;   // length of the longest prefix some inserted sequence shares
        int64_t source = -1;  // the latest inserted sequence that shares it (-1: none)
    };
    // Of sequences[seq]'s first max_tokens tokens against what was inserted.
    Match longest_prefix(int64_t seq, int64_t max_tokens = INT64_MAX) const;
    void insert(int64_t seq);  // sequences[seq]

    struct Node {
        int64_t seq = -1, begin = 0, length = 0;  // edge label: sequences[seq][begin, +length)
        int64_t depth = 0;                        // tokens from the root to the node's end
        int64_t count = 0;                        // sequences passing through or ending here
        int64_t last = -1;                        // latest of them
        int64_t parent = -1;
        std::map<int32_t, int64_t> children;  // by first token of the child's edge
    };
    // Node 0 is the root (empty label). Read-only view for the shared-prefix report.
    const std::vector<Node>& nodes() const { return nodes_; }
    // Throws Error naming the first violation: labels consistent with depths, counts and
    // latest sequence consistent with the children's, every inner node but the root branching
    // or marking a sequence's end.
    void check_invariants() const;

  private:
    int32_t label_token(const Node& n, int64_t i) const { return seqs_[n.seq][n.begin + i]; }
    int64_t split(int64_t node, int64_t at);  // a new node for node's first `at` label tokens

    std::span<const std::vector<int32_t>> seqs_;
    std::vector<Node> nodes_;
    std::vector<int64_t> ends_here_;  // per node: sequences that end exactly at it
};

}  // namespace fluoro::app
