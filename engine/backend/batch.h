// One forward step's input: a batch of tokens, each with its position and sequence, and the rows
// whose logits are wanted. Prefill, decode and speculative verification are all this one shape.
#pragma once

#include <cstdint>
#include <span>

namespace fluoro {

struct Batch {
    std::span<const int32_t> tokens;     // (n_tok)
    std::span<const int32_t> positions;  // (n_tok) position of each token in its sequence
    std::span<const int32_t> seq_ids;    // (n_tok) sequence (conversation slot) of each token
    std::span<const int32_t>
        logit_rows;  // indices into tokens whose logits are returned, ascending
    int64_t size() const { return int64_t(tokens.size()); }
};

}  // namespace fluoro
