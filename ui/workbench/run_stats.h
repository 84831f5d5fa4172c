// The per-message statistics line, kept current from a run's events while it streams: TTFT,
// prompt tok/s, decode tok/s, tokens, cached tokens, acceptance rate (when speculative steps
// arrive), the reasoning tokens when the model reasoned, and the stop reason. Every figure comes
// from the events' own numbers (times, counts); when RunFinished arrives its figures replace the
// running ones.
#pragma once

#include <QString>
#include <cstdint>
#include <optional>

#include "telemetry/events.h"

namespace fluoro::ui {

class RunStats {
  public:
    void add(const Event& e);
    QString line() const;
    // Prompt + generated tokens so far (for the context gauge) and the run's context.
    int64_t context_used() const { return prompt_tokens_ + tokens_; }
    int64_t ctx() const { return ctx_; }
    bool finished() const { return stop_.has_value(); }
    // The reasoning so far (TokenEvent::reasoning, then RunFinished's counts): its tokens and the
    // time from the run's start to its last token.
    int64_t reasoning_tokens() const { return reasoning_tokens_; }
    int64_t reasoning_ns() const { return reasoning_ns_; }

  private:
    int64_t prompt_tokens_ = 0, cached_ = 0, tokens_ = 0, ctx_ = 0;
    int64_t first_token_ns_ = -1, last_token_ns_ = 0;
    int64_t prefill_tokens_ = 0, prefill_ns_ = 0;
    int64_t drafted_ = 0, accepted_ = 0;
    int64_t reasoning_tokens_ = 0, reasoning_ns_ = 0;
    std::optional<double> ttft_ms_, decode_tps_;
    std::optional<std::string> stop_;
};

}  // namespace fluoro::ui
