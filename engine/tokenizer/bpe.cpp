#include "tokenizer/bpe.h"

#include <algorithm>

#include "tokenizer/utf8.h"
#include "tokenizer/vocab.h"

namespace fluoro::tok {

namespace {

// Heap order: the top is the lowest rank, then the leftmost pair.
struct LaterFirst {
    template <typename C>
    bool operator()(const C& a, const C& b) const {
        return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
    }
};

}  // namespace

void BpeSession::consider(int32_t left) {
    if (left < 0) return;
    const int32_t right = symbols_[left].next;
    if (right < 0) return;
    const MergeRule* rule = vocab_.merge(symbols_[left].id, symbols_[right].id);
    if (!rule) return;
    heap_.push_back({rule->rank, left, symbols_[left].id, symbols_[right].id, rule->result});
    std::push_heap(heap_.begin(), heap_.end(), LaterFirst{});
}

void BpeSession::encode_piece(std::string_view piece, std::vector<int32_t>& out) {
    if (piece.empty()) return;
    const bool byte_level = vocab_.byte_level();
    // Gemma 4 has tokens for newline runs that its merges would not build.
    if (vocab_.ignore_merges() || (vocab_.pre_tokenizer() == PreTokenizer::Gemma4 &&
                                   piece.find_first_not_of('\n') == std::string_view::npos)) {
        if (const int32_t whole = vocab_.find(piece); whole != kNoToken) {
            out.push_back(whole);
            return;
        }
    }
    symbols_.clear();
    heap_.clear();
    for (size_t i = 0; i < piece.size();) {
        const size_t len =
            std::min(utf8::sequence_length(static_cast<unsigned char>(piece[i])), piece.size() - i);
        const int32_t id = vocab_.find(piece.substr(i, len));
        // No token for this character: byte-level, it is dropped; raw UTF-8, it stays as a
        // symbol that merges with nothing and is written as its <0xNN> byte tokens.
        if (id == kNoToken && byte_level) {
            i += len;
            continue;
        }
        const auto index = static_cast<int32_t>(symbols_.size());
        symbols_.push_back(
            {id, index - 1, -1, static_cast<uint32_t>(i), static_cast<uint32_t>(len)});
        i += len;
        if (index > 0) symbols_[index - 1].next = index;
    }
    for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols_.size()); ++i) consider(i);

    while (!heap_.empty()) {
        std::pop_heap(heap_.begin(), heap_.end(), LaterFirst{});
        const Candidate c = heap_.back();
        heap_.pop_back();
        Symbol& left = symbols_[c.left];
        // Stale if either side has merged since the pair was queued.
        if (left.id != c.left_id || left.next < 0 || symbols_[left.next].id != c.right_id) continue;
        const int32_t right = left.next;
        left.id = c.result;
        left.next = symbols_[right].next;
        if (left.next >= 0) symbols_[left.next].prev = c.left;
        symbols_[right].id = kNoToken;  // dead
        consider(left.prev);
        consider(c.left);
    }
    for (int32_t i = symbols_.empty() ? -1 : 0; i >= 0; i = symbols_[i].next) {
        const Symbol& s = symbols_[i];
        if (s.id != kNoToken) {
            out.push_back(s.id);
            continue;
        }
        for (char c : piece.substr(s.offset, s.length))
            if (const int32_t b = vocab_.byte_token(static_cast<uint8_t>(c)); b != kNoToken)
                out.push_back(b);
    }
}

}  // namespace fluoro::tok
