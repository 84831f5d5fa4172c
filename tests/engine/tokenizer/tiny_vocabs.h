// Hand-built vocabularies for tokenizer unit tests: small enough to reason about every merge.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/byte_level.h"
#include "tokenizer/vocab.h"

namespace fluoro::tok::test {

// Byte-level spelling of raw text ("a b" -> "aĠb").
inline std::string bl(std::string_view raw) {
    std::string out;
    byte_level_encode(raw, out);
    return out;
}

// A byte-level BPE vocabulary: ids 0..2 are <|endoftext|>, <|im_start|>, <|im_end|> (CONTROL),
// id 3 is <tool> (USER_DEFINED), then every printable ASCII character and a few byte-level
// characters, then `extra` tokens (given raw, spelled byte-level here). `merges` are raw pairs.
inline VocabData bpe_data(const std::vector<std::string>& extra,
                          const std::vector<std::pair<std::string, std::string>>& merges,
                          std::string pre = "gpt-2") {
    VocabData d;
    d.model = TokenizerModel::Bpe;
    d.pre = std::move(pre);
    d.tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool>"};
    d.types = {TokenType::Control, TokenType::Control, TokenType::Control, TokenType::UserDefined};
    for (int c = 0x20; c < 0x7F; ++c) d.tokens.push_back(bl(std::string(1, char(c))));
    for (unsigned char b : {0x0Au, 0x09u, 0xC3u, 0xA9u, 0xF0u, 0x9Fu, 0x98u, 0x80u})
        d.tokens.push_back(bl(std::string(1, char(b))));
    for (const std::string& e : extra) d.tokens.push_back(bl(e));
    d.types.resize(d.tokens.size(), TokenType::Normal);
    for (const auto& [l, r] : merges) d.merges.push_back(bl(l) + " " + bl(r));
    d.bos = 1;
    d.eos = 2;
    return d;
}

// A SentencePiece-style vocabulary: <unk> <s> </s> (ids 0..2), <start_of_turn> (CONTROL, 3),
// "\n" (USER_DEFINED, 4), the 256 byte tokens <0x00>..<0xFF> (5..260), then `pieces` as
// (text with ▁, score) NORMAL tokens.
inline VocabData spm_data(const std::vector<std::pair<std::string, float>>& pieces) {
    VocabData d;
    d.model = TokenizerModel::Spm;
    d.tokens = {"<unk>", "<s>", "</s>", "<start_of_turn>", "\n"};
    d.types = {TokenType::Unknown, TokenType::Control, TokenType::Control, TokenType::Control,
               TokenType::UserDefined};
    d.scores = {0, 0, 0, 0, 0};
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        d.tokens.push_back(name);
        d.types.push_back(TokenType::Byte);
        d.scores.push_back(0);
    }
    for (const auto& [text, score] : pieces) {
        d.tokens.push_back(text);
        d.types.push_back(TokenType::Normal);
        d.scores.push_back(score);
    }
    d.bos = 1;
    d.eos = 2;
    d.unk = 0;
    d.add_space_prefix = false;
    return d;
}

inline constexpr int32_t kSpmFirstPiece = 5 + 256;

}  // namespace fluoro::tok::test
