#include "tokenizer/spm.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocab.h"

namespace fluoro::tok {

namespace {

// Heap order: the top is the highest score, then the leftmost pair.
struct WorseFirst {
    template <typename C>
    bool operator()(const C& a, const C& b) const {
        return a.score != b.score ? a.score < b.score : a.left > b.left;
    }
};

}  // namespace

int32_t SpmSession::mergeable(std::string_view piece) const {
    const int32_t id = vocab_.find(piece);
    if (id == kNoToken) return kNoToken;
    switch (vocab_.type(id)) {
        case TokenType::Normal:
        case TokenType::UserDefined:
        case TokenType::Unused:
        case TokenType::Undefined:
            return id;
        default:
            return kNoToken;
    }
}

void SpmSession::consider(int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols_[left];
    const Symbol& r = symbols_[right];
    const std::string_view piece = text_.substr(l.offset, l.length + r.length);
    const int32_t id = mergeable(piece);
    if (id == kNoToken) return;
    heap_.push_back({vocab_.score(id), left, right, l.length + r.length});
    std::push_heap(heap_.begin(), heap_.end(), WorseFirst{});
    if (vocab_.type(id) == TokenType::Unused)
        unmerge_[piece] = {text_.substr(l.offset, l.length), text_.substr(r.offset, r.length)};
}

void SpmSession::emit(std::string_view piece, std::vector<int32_t>& out, int depth) const {
    const int32_t id = vocab_.find(piece);
    if (id != kNoToken) {
        if (vocab_.type(id) == TokenType::Unused && depth < 64) {
            if (const auto it = unmerge_.find(piece); it != unmerge_.end()) {
                emit(it->second.first, out, depth + 1);
                emit(it->second.second, out, depth + 1);
                return;
            }
        }
        out.push_back(id);
        return;
    }
    for (char c : piece) {  // byte fallback
        const int32_t byte = vocab_.byte_token(static_cast<uint8_t>(c));
        if (byte != kNoToken) {
            out.push_back(byte);
        } else if (vocab_.unk() != kNoToken) {
            out.push_back(vocab_.unk());
        }
    }
}

void SpmSession::encode(std::string_view text, std::vector<int32_t>& out) {
    if (text.empty()) return;
    if (text.size() > UINT32_MAX / 2) throw Error("tokenizer: text fragment too long");
    text_ = text;
    symbols_.clear();
    heap_.clear();
    unmerge_.clear();
    for (size_t i = 0; i < text.size();) {
        const size_t len =
            std::min(utf8::sequence_length(static_cast<unsigned char>(text[i])), text.size() - i);
        const auto index = static_cast<int32_t>(symbols_.size());
        symbols_.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(len), index - 1,
                            i + len < text.size() ? index + 1 : -1});
        i += len;
    }
    for (int32_t i = 1; i < static_cast<int32_t>(symbols_.size()); ++i) consider(i - 1, i);

    while (!heap_.empty()) {
        std::pop_heap(heap_.begin(), heap_.end(), WorseFirst{});
        const Candidate c = heap_.back();
        heap_.pop_back();
        Symbol& l = symbols_[c.left];
        Symbol& r = symbols_[c.right];
        if (l.length == 0 || r.length == 0 || l.length + r.length != c.length) continue;
        l.length += r.length;
        r.length = 0;
        l.next = r.next;
        if (r.next >= 0) symbols_[r.next].prev = c.left;
        consider(l.prev, c.left);
        consider(c.left, l.next);
    }
    for (int32_t i = 0; i >= 0; i = symbols_[i].next)
        emit(text.substr(symbols_[i].offset, symbols_[i].length), out, 0);
}

}  // namespace fluoro::tok
