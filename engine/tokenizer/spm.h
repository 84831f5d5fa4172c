// SentencePiece-style BPE (tokenizer.ggml.model = "llama"; Gemma) for one fragment of text whose
// spaces are already "▁": start from its characters, repeatedly merge the adjacent pair whose
// concatenation is a piece with the highest score (leftmost on ties), then emit each symbol's
// id; a symbol with no token falls back to its bytes as <0xNN> tokens. As in SentencePiece,
// merges may only produce NORMAL, USER_DEFINED or UNUSED pieces (never CONTROL, BYTE or UNKNOWN
// ones), and an UNUSED result is split back into the two pieces it was made from.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fluoro::tok {

class Vocab;

class SpmSession {
  public:
    explicit SpmSession(const Vocab& vocab) : vocab_(vocab) {}
    void encode(std::string_view text, std::vector<int32_t>& out);

  private:
    struct Symbol {
        uint32_t offset;  // into the text
        uint32_t length;  // 0 once merged into its left neighbour
        int32_t prev;
        int32_t next;
    };
    struct Candidate {
        float score;
        int32_t left;
        int32_t right;
        uint32_t length;  // of the merged text, to detect stale entries
    };
    int32_t mergeable(std::string_view piece) const;
    void consider(int32_t left, int32_t right);
    void emit(std::string_view piece, std::vector<int32_t>& out, int depth) const;

    const Vocab& vocab_;
    std::string_view text_;
    std::vector<Symbol> symbols_;
    std::vector<Candidate> heap_;
    // Only for merges that produced UNUSED pieces: what they were made of.
    std::unordered_map<std::string_view, std::pair<std::string_view, std::string_view>> unmerge_;
};

}  // namespace fluoro::tok
