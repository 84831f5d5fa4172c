// WordPiece (BERT; tokenizer.ggml.model "bert"), as llama.cpp runs it on the vocabularies its
// converter writes: word-initial pieces spelled "▁word", continuations bare (BERT's "##"
// dropped). The text is split into words at white space, and every punctuation character, ASCII
// symbol and CJK ideograph is a word of its own; control characters (and NUL, U+FFFD) are dropped,
// letters lowercased and accents stripped (NFD, combining marks dropped) when the vocabulary says
// so - by default, as BERT's uncased normalizer. Each word, "▁" prepended, is then cut greedily
// into the longest vocabulary pieces from the left; a word any part of which no piece spells
// becomes one [UNK].
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace fluoro::tok {

class WordPiece {
  public:
    // `vocab` only sizes the search; encode() takes the vocabulary (a Tokenizer moves its own).
    explicit WordPiece(const Vocab& vocab);
    ~WordPiece();
    WordPiece(WordPiece&&) noexcept;
    WordPiece& operator=(WordPiece&&) noexcept;

    // Appends the ids of `text` (valid UTF-8, no special tokens: encode() split them out).
    // Thread-safe: the state of a call is its own.
    void encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) const;

  private:
    struct Classes;  // Unicode general categories of code points (PCRE2)
    size_t max_token_bytes_ = 0;
    std::unique_ptr<Classes> classes_;
};

}  // namespace fluoro::tok
