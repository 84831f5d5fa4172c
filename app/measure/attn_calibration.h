// Calibration for the training-free converters (model/kv_head_merge.h, model/mla_convert.h): the
// model run over a text on the CPU, each layer's attention input — the attn_norm output every
// architecture of the llama layer computes right before its Q/K/V projections — summed as a Gram
// matrix (AttnInputGram, model/convert_math.h). The converters then fit their merged heads and
// latents to the keys and values the model produces on that text, not to the raw weights.
//
// How: a CPU backend whose rms_norm / add_rms_norm also read their output when the weight is a
// layer's blk.N.attn_norm.weight; the text goes through perplexity()'s chunks (so the tokens see
// the context they would in use), and the text's perplexity comes with it.
#pragma once

#include <cstdint>
#include <filesystem>

#include "model/convert_math.h"

namespace fluoro::app {

struct AttnCalibrationOptions {
    std::filesystem::path text;  // a UTF-8 file; empty: the Bible text (measure/eval_text.h)
    int64_t skip = 0;            // tokens of the text passed over first (what an eval scores)
    int64_t tokens = 2048;       // then at most this many, in whole chunks
    int64_t chunk = 512;
    int threads = 0;
};

struct AttnCalibration {
    AttnInputGram gram;
    double ppl = 0;  // the text's perplexity under the model, as measured on the way
};

// Throws Error for an unreadable model or text, or fewer than one chunk of tokens after `skip`,
// and UnsupportedError for a model whose layers have no attn_norm.weight.
AttnCalibration calibrate_attn_inputs(const std::filesystem::path& model,
                                      const AttnCalibrationOptions& opt);

}  // namespace fluoro::app
