// Regex pre-tokenization for byte-level BPE: the text between special tokens is cut into pieces
// (words, numbers, punctuation runs, whitespace) and BPE runs on each piece alone. A family is a
// list of published regexes applied in turn: each one re-splits every piece of the previous
// step, and both its matches and the gaps between them become pieces. Each piece is matched as
// its own subject, so a lookahead never sees past the piece (as in HuggingFace's Sequence of
// pre-tokenizers). An empty match cuts the piece where it matches. The regexes run on PCRE2 (UTF +
// UCP, "$" only at the very end, JIT when available); the families are in pre_tokenizer_table.h.
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "tokenizer/pre_tokenizer_table.h"

namespace fluoro::tok {

struct TextSpan {
    size_t offset;
    size_t length;
};

class RegexSplitter {
  public:
    // Compiles `patterns` (throws Error naming the pattern and PCRE2's message on failure).
    explicit RegexSplitter(std::span<const std::string_view> patterns);
    RegexSplitter(RegexSplitter&&) noexcept;
    RegexSplitter& operator=(RegexSplitter&&) noexcept;
    ~RegexSplitter();

    // Replaces `pieces` with the pieces of `text` (valid UTF-8), in order and covering it whole.
    // `scratch` is reused storage. Throws Error if PCRE2 fails (e.g. a resource limit).
    void split(std::string_view text, std::vector<TextSpan>& pieces,
               std::vector<TextSpan>& scratch) const;

  private:
    struct Compiled;
    std::vector<std::unique_ptr<Compiled>> regexes_;
};

}  // namespace fluoro::tok
