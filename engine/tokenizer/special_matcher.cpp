#include "tokenizer/special_matcher.h"

#include "tokenizer/vocab.h"

namespace fluoro::tok {

SpecialMatcher::SpecialMatcher(const Vocab& vocab, std::span<const int32_t> ids) {
    for (int32_t id : ids) {
        const std::string_view text = vocab.text(id);
        if (text.empty()) continue;
        uint32_t node = 0;
        for (char c : text) {
            const auto b = static_cast<unsigned char>(c);
            const auto [it, added] =
                edges_.emplace(edge_key(node, b), static_cast<uint32_t>(nodes_.size()));
            if (added) nodes_.emplace_back();
            node = it->second;
        }
        if (nodes_[node].token < 0) nodes_[node].token = id;  // duplicate text: lowest id
        starts_[static_cast<unsigned char>(text[0])] = true;
    }
}

std::optional<SpecialMatcher::Match> SpecialMatcher::find(std::string_view text,
                                                          size_t from) const {
    if (empty()) return std::nullopt;
    for (size_t pos = from; pos < text.size(); ++pos) {
        if (!starts_[static_cast<unsigned char>(text[pos])]) continue;
        uint32_t node = 0;
        std::optional<Match> best;
        for (size_t i = pos; i < text.size(); ++i) {
            const auto it = edges_.find(edge_key(node, static_cast<unsigned char>(text[i])));
            if (it == edges_.end()) break;
            node = it->second;
            if (nodes_[node].token >= 0) best = Match{pos, i + 1 - pos, nodes_[node].token};
        }
        if (best) return best;
    }
    return std::nullopt;
}

}  // namespace fluoro::tok
