// The token sampler: turns one row of logits into the next token, in llama.cpp's default order
// (penalties -> top-k -> top-p -> min-p -> temperature -> draw), and reports how likely the pick
// and its best alternatives were, for the UI's probability view.
//
// The reported distribution
// -------------------------
// SampledToken::logprob and ::top are log-probabilities under the FULL vocabulary distribution
// after the penalties and the temperature, but BEFORE truncation (top-k/top-p/min-p):
//     p(i) = softmax(penalized_logits / T)(i),   T = temperature, or 1 when temperature == 0.
// This shows what the model itself preferred at the chosen temperature, independent of which
// truncation settings are on. (llama.cpp's server instead reports probabilities after its whole
// sampling chain, where truncated tokens have probability 0.) The token actually drawn always
// comes from the truncated, renormalized distribution.
//
// Allocation: all scratch (sized to the vocabulary) is allocated in the constructor; sample()
// allocates nothing. SampledToken holds its alternatives in a fixed array (kMaxTopProbs).
// Not thread-safe: one engine thread owns a Sampler.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "sampling/candidates.h"
#include "sampling/sampling_params.h"
#include "sampling/token_dist.h"

namespace fluoro {

struct TokenProb {
    int32_t id = -1;
    float logprob = 0.0f;  // natural log; exp(logprob) is the probability
};

struct SampledToken {
    int32_t id = -1;
    float logprob = 0.0f;      // log p(id) under the reported distribution (see above)
    int32_t n_candidates = 0;  // tokens the draw chose among, after truncation (1 when greedy)
    int32_t n_top = 0;         // entries of top_storage in use: min(n_probs, tokens above -inf)
    // The n_top most likely tokens under the reported distribution, most likely first (ties: lower
    // id first). Read through top().
    std::array<TokenProb, kMaxTopProbs> top_storage{};

    std::span<const TokenProb> top() const {
        return {top_storage.data(), static_cast<size_t>(n_top)};
    }
};

class Sampler {
  public:
    // Throws fluoro::Error for invalid params or n_vocab <= 0.
    Sampler(const SamplingParams& params, int32_t n_vocab);

    // Picks the next token. `logits` must hold n_vocab values; NaN or +inf anywhere, or all -inf,
    // throws fluoro::Error naming the token (a -inf logit means "banned" and is allowed).
    // `history` is the context so far (prompt and generated tokens, oldest first); only its last
    // repeat_last_n tokens are read, for the penalties, and an id there outside [0, n_vocab)
    // throws (naming its position). Nothing is read when every penalty is off.
    SampledToken sample(std::span<const float> logits, std::span<const int32_t> history);

    // The distribution sample() draws from for these logits and history (same checks and
    // throws): the truncated survivors with their renormalized probabilities, or, when greedy,
    // the argmax with probability 1. Reads no random numbers.
    void distribution(std::span<const float> logits, std::span<const int32_t> history,
                      TokenDist& out);
    // What sample() would report had it drawn `id` (logprob, top alternatives; n_candidates 0):
    // for tokens chosen elsewhere, e.g. by speculative verification. Reads no random numbers.
    SampledToken report(std::span<const float> logits, std::span<const int32_t> history,
                        int32_t id);
    // Draws from `d` with this sampler's random stream (one number), in d's order.
    int32_t draw_from(const TokenDist& d);
    // The next number of the random stream, uniform in [0, 1).
    double uniform01();

    // Restarts the random stream from `seed` (params().seed is updated to match).
    void reset(uint64_t seed);
    // Changes the settings without touching the random stream (validated; throws on bad input).
    void set_params(const SamplingParams& params);

    const SamplingParams& params() const { return params_; }
    // Whether sample() takes the argmax (temperature 0, or too small to invert in float).
    bool greedy() const;
    int32_t n_vocab() const { return n_vocab_; }

  private:
    void copy_checked(std::span<const float> logits);
    void apply_penalties(std::span<const int32_t> history);
    // copy_checked + apply_penalties; returns the largest penalized logit.
    float prepare(std::span<const float> logits, std::span<const int32_t> history);
    // Fills the reported top alternatives (weights_ = exp((logit - max) / T) over the vocabulary
    // as a side effect, which truncate() relies on); sets log_total for logprob_of.
    SampledToken reported(float max_logit, double& log_total);
    float logprob_of(int32_t id, float max_logit, double log_total) const;
    // top-k -> top-p -> min-p on the penalized logits (T = 1); returns the survivors, in a
    // deterministic order (most likely first when sorted, else by id). Reuses candidates_.
    std::span<const sampling::Candidate> truncate(float max_logit, float inv_t);
    int32_t draw(std::span<const sampling::Candidate> survivors);

    SamplingParams params_;
    int32_t n_vocab_;
    std::mt19937_64 rng_;
    // Scratch, each sized to the vocabulary:
    std::vector<float> logits_;                    // (n_vocab) penalized logits
    std::vector<float> weights_;                   // (n_vocab) exp((logit - max) / T)
    std::vector<float> weights_t1_;                // (n_vocab) exp(logit - max), top-p when T != 1
    std::vector<int32_t> counts_;                  // (n_vocab) penalty window counts, kept all-zero
    std::vector<sampling::Candidate> candidates_;  // (n_vocab) truncation working set
};

}  // namespace fluoro
