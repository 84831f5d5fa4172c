// What every decoder-only architecture here allocates the same way: its activation buffers
// (sized from the hyperparameters for a maximum batch) and the shape of its KV cache.
#pragma once

#include "backend/backend.h"
#include "model/hparams.h"

namespace fluoro {

struct DecoderBuffers {  // (max_tokens, width) each; logits (max_logit_rows, n_vocab)
    Act x, t, q, k, v, attn, gate, up, logits;
};

// Allocates the buffers in the backend and reserves its per-operation scratch.
DecoderBuffers alloc_decoder_buffers(Backend& backend, const Hparams& hp, int64_t max_tokens,
                                     int64_t max_logit_rows);

KvShape decoder_kv_shape(const Hparams& hp);

}  // namespace fluoro
