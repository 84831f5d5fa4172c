// Sampling settings: how the next token is picked from a row of logits (penalties, truncation,
// temperature, seed) and how many alternatives are reported to the UI. Defaults are llama.cpp's
// command-line defaults, so a run here and a run of llama-cli with no sampling flags compare.
#pragma once

#include <cstdint>

namespace fluoro {

// Largest SamplingParams::n_probs (the size of SampledToken's fixed alternative list).
inline constexpr int32_t kMaxTopProbs = 32;

struct SamplingParams {
    // Softmax temperature. 0 = greedy (argmax of the penalized logits, lowest id wins ties); so is
    // a positive value too small to invert in float (below ~3e-39).
    float temperature = 0.8f;
    // Keep only the k most likely tokens. 0 = off. Larger than the vocabulary = off.
    int32_t top_k = 40;
    // Nucleus: keep the smallest most-likely prefix whose probability reaches top_p. 1 = off.
    float top_p = 0.95f;
    // Drop tokens less likely than min_p times the most likely one. 0 = off.
    float min_p = 0.05f;

    // Repetition penalty over the last repeat_last_n tokens of the history (-1 = all of it,
    // 0 = none): a positive logit is divided by it, a negative one multiplied. 1 = off.
    float repeat_penalty = 1.0f;
    int32_t repeat_last_n = 64;
    // OpenAI-style penalties over the same window: logit -= count * frequency_penalty
    // + (count > 0) * presence_penalty. 0 = off.
    float frequency_penalty = 0.0f;
    float presence_penalty = 0.0f;

    // Seed of the sampler's random stream (std::mt19937_64). Same seed, settings and logits give
    // the same tokens.
    uint64_t seed = 0;
    // How many top alternatives to report with each sampled token, 0..kMaxTopProbs.
    int32_t n_probs = 5;

    // Throws fluoro::Error naming the first bad field and its value.
    void validate() const;
};

}  // namespace fluoro
