// The decode loop: prefill a prompt into a Sequence, then sample, stream and feed back tokens
// until an end-of-generation token, the token limit, a full context, or cancellation. Reports the
// timings llama.cpp and LM Studio users expect (TTFT, prompt tok/s, decode tok/s).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "decode/sequence.h"
#include "decode/stop_strings.h"
#include "sampling/sampler.h"

namespace fluoro::tok {
class Tokenizer;
}

namespace fluoro {

class TokenConstraint;  // decode/json_constraint.h

enum class StopReason { EndOfGeneration, MaxTokens, ContextFull, Cancelled, StopString };
std::string_view stop_reason_name(StopReason r);

struct GenerateOptions {
    int64_t max_tokens = 512;     // generated tokens at most (the EOG token not counted)
    bool render_special = false;  // include control-token text in the streamed output
    // Ends generation when the text contains one (decode/stop_strings.h); the text is cut
    // before it, the tokens stay (they were streamed).
    std::vector<std::string> stop_strings;
    // Constrained decoding (decode/json_constraint.h): each step's logits are masked by it
    // before sampling, and the run ends when it is done. Not owned; nullptr: none. The
    // speculative loop does not take one (its drafts are not masked).
    TokenConstraint* constraint = nullptr;
};

struct GeneratedToken {
    int32_t id = -1;
    std::string_view text;                 // complete UTF-8 released by this token (may be empty)
    const SampledToken* sample = nullptr;  // logprob and top-N alternatives
    double ms = 0;                         // since generation started
};

struct GenerateResult {
    std::vector<int32_t> tokens;  // generated ids (without the EOG token)
    std::string text;
    StopReason stop = StopReason::MaxTokens;
    PrefillStats prefill;
    double ttft_ms = 0;        // start -> first token sampled (prefill + first sample)
    double decode_ms = 0;      // time of the decode steps after the first token
    int64_t decode_steps = 0;  // tokens produced after the first (one forward pass each when
                               // not speculating)
    // Speculative decoding (spec_generate.h): tokens drafted and accepted, target forward passes
    // after the prefill (tau = decode_steps / target_steps).
    int64_t drafted_tokens = 0, accepted_tokens = 0, target_steps = 0;
    double prompt_tps() const {
        return prefill.ms > 0 ? 1000.0 * double(prefill.computed_tokens) / prefill.ms : 0;
    }
    double decode_tps() const {
        return decode_ms > 0 ? 1000.0 * double(decode_steps) / decode_ms : 0;
    }
};

using TokenCallback = std::function<void(const GeneratedToken&)>;

// After a token added piece_bytes to r.text: when a stop string now ends in it, cuts r.text
// before the stop string, sets StopReason::StopString and returns true. (Both decode loops.)
bool cut_at_stop_string(GenerateResult& r, size_t piece_bytes, const GenerateOptions& opt);

// One sequence's side of the decode loop, from the logits of its last token on: sampling (through
// the constraint), streaming, and the rules that end a run. generate() drives one of these over
// its Sequence; continuous batching (decode/batch_decoder.h) drives one per sequence of a batch,
// so a sequence generates the same tokens alone or batched.
class TokenLoop {
  public:
    using Clock = std::chrono::steady_clock;
    // The run's times count from `start`. The references must outlive the loop.
    TokenLoop(const tok::Tokenizer& tokenizer, Sampler& sampler, const GenerateOptions& opt,
              Clock::time_point start);
    ~TokenLoop();
    TokenLoop(const TokenLoop&) = delete;
    TokenLoop& operator=(const TokenLoop&) = delete;

    // Samples the next token from `logits` (those of seq's last token). Returns it when the run
    // goes on — the caller appends it to seq and brings its logits back here, calling stepped()
    // — or nullopt when the run ended (result().stop says why).
    std::optional<int32_t> next(std::span<const float> logits, const Sequence& seq,
                                const TokenCallback& on_token);
    void stepped() { ++r_.decode_steps; }
    // Ends the run (stop = Cancelled unless it had ended): streams what the detokenizer still
    // holds and closes the timings. Call once.
    GenerateResult& finish(const TokenCallback& on_token, bool cancelled = false);
    GenerateResult& result() { return r_; }
    double ms_since_start() const;

  private:
    const tok::Tokenizer& tokenizer_;
    Sampler& sampler_;
    const GenerateOptions& opt_;
    Clock::time_point start_, first_token_at_{};
    GenerateResult r_;
    struct Detail;
    std::unique_ptr<Detail> d_;  // the streaming decoder and the constraint's scratch
};

// Runs the loop. Cancellation (the flag set from another thread, e.g. Ctrl-C) stops within one
// step; what was generated so far is returned with StopReason::Cancelled. Errors propagate.
GenerateResult generate(Sequence& seq, const tok::Tokenizer& tokenizer,
                        std::span<const int32_t> prompt, Sampler& sampler,
                        const GenerateOptions& opt, const TokenCallback& on_token = {},
                        const std::atomic<bool>* cancel = nullptr);

}  // namespace fluoro
