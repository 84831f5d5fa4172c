// Text <-> token ids for a loaded model, exactly as the model's published tokenizer does it:
// byte-level BPE (SmolLM2 and other "gpt2" vocabularies) or SentencePiece-style BPE (Gemma).
// encode() first splits special-token texts out of the input, then pre-tokenizes and merges
// the text between them; decode() and StreamingDecoder turn ids back into bytes. A Tokenizer is
// immutable after construction and safe to use from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/special_matcher.h"
#include "tokenizer/vocab.h"

namespace fluoro::gguf {
class GgufFile;
}

namespace fluoro::tok {

class RegexSplitter;
class WordPiece;

class Tokenizer {
  public:
    explicit Tokenizer(Vocab vocab);
    static Tokenizer from_gguf(const gguf::GgufFile& file);  // load_vocab + construct

    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;
    ~Tokenizer();

    const Vocab& vocab() const { return vocab_; }

    // Token ids for `text` (must be valid UTF-8; otherwise Error naming the byte offset).
    // add_special: prepend BOS / append EOS as the vocabulary's add_bos/add_eos say.
    // parse_special: CONTROL (and UNKNOWN) token texts in `text` become those single tokens;
    // when false they are tokenized as ordinary text. USER_DEFINED tokens always match.
    std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;
    // As encode(), but inside the `literal` byte ranges (sorted, not overlapping) CONTROL token
    // texts stay ordinary text, as if parse_special were false there: a CONTROL token matches only
    // wholly outside the ranges, a USER_DEFINED one anywhere (also across an edge). The text
    // between special tokens is still merged as one piece across the ranges' edges. For a rendered
    // chat: the template's markup is parsed for special tokens, the contents a user typed are not,
    // and the ids equal a whole-text encode() wherever the contents hold no special-token text.
    std::vector<int32_t> encode(std::string_view text, std::span<const TextSpan> literal,
                                bool add_special, bool parse_special) const;

    // The bytes token `id` stands for (Error if out of range). CONTROL and UNKNOWN tokens render
    // as their text only when render_special, otherwise as nothing. A byte token yields one
    // byte, so a piece need not be valid UTF-8 on its own.
    std::string token_to_piece(int32_t id, bool render_special) const;
    void append_piece(int32_t id, bool render_special, std::string& out) const;

    // Concatenated pieces. For a vocabulary with add_space_prefix, the space encode() put in front
    // of the first text token is removed again (as SentencePiece's decoder does).
    std::string decode(std::span<const int32_t> ids, bool render_special) const;

  private:
    friend class StreamingDecoder;
    // One step of decode(): appends id's piece; `at_start` tracks the dummy-prefix rule.
    void append_decoded(int32_t id, bool render_special, bool& at_start, std::string& out) const;
    struct EncodeScratch;
    void encode_fragment(std::string_view fragment, bool after_special, EncodeScratch& scratch,
                         std::vector<int32_t>& out) const;

    Vocab vocab_;
    std::unique_ptr<RegexSplitter> splitter_;  // byte-level BPE only
    std::unique_ptr<WordPiece> wordpiece_;     // WordPiece only
    SpecialMatcher all_specials_;              // CONTROL + USER_DEFINED + UNKNOWN
    SpecialMatcher user_defined_;              // USER_DEFINED only
};

// Turns a stream of generated tokens into text one token at a time, returning only complete
// UTF-8: a character split across tokens (byte-fallback pieces, byte-level BPE splitting an
// emoji) is held back until its last byte arrives. Bytes that can never form a character are
// replaced by U+FFFD, so every returned string is valid UTF-8; when the tokens' decode() is
// valid UTF-8, the concatenated output equals it exactly.
class StreamingDecoder {
  public:
    StreamingDecoder(const Tokenizer& tokenizer, bool render_special);

    std::string push(int32_t id);  // Error if id is out of range (nothing is consumed then)
    std::string flush();           // end of stream: a held partial character becomes U+FFFD
    void reset();                  // forget held bytes; the next token starts a new text
    size_t held_bytes() const { return pending_.size(); }

  private:
    std::string take_complete(bool at_end);

    const Tokenizer* tokenizer_;
    bool render_special_;
    bool at_start_ = true;
    std::string pending_;
};

}  // namespace fluoro::tok
