// BPE merging for one pre-tokenized piece (spelled in the byte-level alphabet, or raw UTF-8 with
// "▁" for spaces for Gemma 4): start from its characters, repeatedly merge the adjacent pair with
// the lowest merge rank (leftmost on ties), emit the final symbols' ids. Characters a byte-level
// vocabulary lacks are dropped before merging, as HuggingFace's BPE does without an unk token;
// in a raw UTF-8 vocabulary they fall back to <0xNN> byte tokens. With ignore_merges a piece that
// is itself a token is emitted whole. One session per encode() call; its buffers are reused
// across pieces.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace fluoro::tok {

class Vocab;

class BpeSession {
  public:
    explicit BpeSession(const Vocab& vocab) : vocab_(vocab) {}
    void encode_piece(std::string_view piece, std::vector<int32_t>& out);

  private:
    struct Symbol {
        int32_t id;
        int32_t prev;             // index of the previous live symbol, -1 at the start
        int32_t next;             // index of the next live symbol, -1 at the end
        uint32_t offset, length;  // the character in the piece (for the byte fallback)
    };
    struct Candidate {
        int32_t rank;
        int32_t left;  // symbol index
        int32_t left_id;
        int32_t right_id;
        int32_t result;
    };
    void consider(int32_t left);  // queue the pair (left, left.next) if it merges

    const Vocab& vocab_;
    std::vector<Symbol> symbols_;
    std::vector<Candidate> heap_;
};

}  // namespace fluoro::tok
