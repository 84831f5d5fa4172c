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

// The LM head over only the rows whose logits the batch wants: those rows of the residual x are
// gathered into buf.t, RMS-normed by output_norm, and multiplied by head into buf.logits.
// Returns the logits, (batch.logit_rows.size(), n_vocab).
Act decoder_logits(Backend& be, const DecoderBuffers& buf, const Batch& batch, const Act& x,
                   const Weight& output_norm, float eps, const Weight& head);

}  // namespace fluoro
