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
    // Run only the first exit_layer layers, then the final norm and the LM head (0 = all layers):
    // the early-exit draft of self-speculative decoding. The cache must be one the full model
    // never writes to (layers past exit_layer are left untouched).
    int64_t exit_layer = 0;
    int64_t size() const { return int64_t(tokens.size()); }
    // How many of a model's n_layer layers this batch runs.
    int64_t layers_to_run(int64_t n_layer) const {
        return exit_layer > 0 && exit_layer < n_layer ? exit_layer : n_layer;
    }
};

}  // namespace fluoro
