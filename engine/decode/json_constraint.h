// Constrained decoding: at every step the tokens that cannot continue the output as the
// constraint requires are masked (logit -inf) before sampling, so whatever the sampler picks —
// greedy or at any temperature — keeps the output valid. JsonConstraint requires one JSON object
// (OpenAI's response_format {"type": "json_object"}): a token is allowed when its bytes extend
// the text so far to a prefix of some JSON object (sampling/json_prefix.h), and generation ends
// as soon as the object is complete. The cost is one pass over the vocabulary per step: inside a
// string a token without quote, backslash or control bytes is allowed as it is; elsewhere a token
// whose first byte the state refuses is masked at once; only the rest have their bytes tried on
// a copy of the recognizer's small state.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sampling/json_prefix.h"

namespace fluoro::tok {
class Tokenizer;
}

namespace fluoro {

class TokenConstraint {
  public:
    virtual ~TokenConstraint() = default;
    // Sets the logit of every token that may not come next to -inf (logits: n_vocab values).
    // Throws Error when no token may.
    virtual void mask(std::span<float> logits) const = 0;
    // The token generated (one mask() allowed).
    virtual void accept(int32_t id) = 0;
    // The output is complete: generation stops (finish reason "stop").
    virtual bool done() const = 0;
};

// What a constraint needs of a vocabulary, computed once per model and shared by its
// constraints: the bytes each token adds to the output (empty for control, unknown and unused
// tokens, which a constraint never allows), each token's first byte, and whether all its bytes
// may stand inside a JSON string as they are.
struct ConstraintVocab {
    std::vector<std::string> bytes;
    std::vector<uint8_t> first;
    std::vector<uint8_t> plain;  // 1: no '"', '\\' or control byte (and not empty)
};
std::shared_ptr<const ConstraintVocab> constraint_vocab(std::vector<std::string> token_bytes);
// Tokenizer::token_to_piece without special tokens, for every token.
std::shared_ptr<const ConstraintVocab> constraint_vocab(const tok::Tokenizer& t);

class JsonConstraint final : public TokenConstraint {
  public:
    // start: the text so far (a prefix already generated); default none.
    explicit JsonConstraint(std::shared_ptr<const ConstraintVocab> vocab, JsonPrefix start = {});
    void mask(std::span<float> logits) const override;
    void accept(int32_t id) override;
    bool done() const override { return state_.complete(); }

  private:
    std::shared_ptr<const ConstraintVocab> vocab_;
    JsonPrefix state_;
};

}  // namespace fluoro
