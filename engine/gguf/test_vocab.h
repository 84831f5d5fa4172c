// The tiny tokenizers written into test models: byte-level BPE ("gpt2": the 256 byte symbols,
// a few merges, ChatML specials) and SentencePiece-style ("llama": <0xNN> byte tokens, single
// characters, scored merged pieces, Gemma turn specials). Part of test_model; not a public API.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_writer.h"

namespace fluoro::gguf {

// Size of the vocabulary before padding, for "gpt2" or "llama"; Error for other models.
uint32_t test_vocab_size(std::string_view model);

// Writes the tokenizer.* keys for `model` with exactly n_vocab tokens (padded with unused
// tokens); Error when n_vocab is smaller than test_vocab_size(model).
void add_test_vocab(GgufWriter& w, std::string_view model, uint32_t n_vocab);

}  // namespace fluoro::gguf
