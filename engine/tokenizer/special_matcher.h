// Finds special-token texts (control tokens like "<|im_start|>", user-defined ones like Gemma's
// "\n\n" or "<div>") inside raw text so they become single tokens before BPE/SPM runs. Matching is
// leftmost, then longest: how HuggingFace tokenizers splits added tokens and how SentencePiece
// matches user-defined pieces. (llama.cpp instead splits the longest token text everywhere first;
// the two differ only when special texts overlap, which no vocabulary we ship has.)
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fluoro::tok {

class Vocab;

class SpecialMatcher {
  public:
    struct Match {
        size_t pos;
        size_t len;
        int32_t id;
    };

    SpecialMatcher() = default;
    // Indexes the texts of `ids` (tokens of `vocab`; empty texts are skipped).
    SpecialMatcher(const Vocab& vocab, std::span<const int32_t> ids);

    bool empty() const { return nodes_.size() <= 1; }
    // The leftmost match starting at or after `from` (longest at that position), or nullopt.
    std::optional<Match> find(std::string_view text, size_t from) const;

  private:
    struct Node {
        int32_t token = -1;  // token ending here, or -1
    };
    static uint64_t edge_key(uint32_t node, unsigned char byte) {
        return (uint64_t(node) << 8) | byte;
    }

    std::vector<Node> nodes_{Node{}};               // trie, node 0 = root
    std::unordered_map<uint64_t, uint32_t> edges_;  // (node, byte) -> child
    std::array<bool, 256> starts_{};                // bytes that begin some text
};

}  // namespace fluoro::tok
