// Speculative generation: the decode loop of generate.h, but each step a drafter proposes tokens
// and the target checks all of them in one forward pass (Sequence::extend), keeps the accepted
// prefix plus one token of its own (verify.h), and rolls the rest back out of its KV cache. At
// temperature 0 the output is token for token that of generate(); above 0 it follows the same
// distribution (the exact rule, with the sampler's transforms applied to both models).
#pragma once

#include <atomic>
#include <functional>
#include <span>
#include <vector>

#include "decode/generate.h"
#include "speculative/drafter.h"
#include "speculative/spec_settings.h"
#include "speculative/verify.h"

namespace fluoro::spec {

struct SpecOptions {
    int32_t max_draft = SpeculativeSettings{}.max_draft;  // tokens drafted per step at most
    // Adapt the draft length to recent acceptance: after a fully accepted draft draft max_draft
    // again, after a rejection one more than were accepted (at least min_draft). Going back to
    // the maximum at once (rather than two more per step) because verifying one drafted token
    // costs much more than each further one (SmolLM2, Xeon host, timed inside the decoding loop:
    // a step verifying 1 drafted token 1.31 plain decode steps, 6 tokens 2.0): copy set 3.07 ->
    // 3.30 tokens per forward (docs/PERFORMANCE.md).
    bool adaptive = true;
    int32_t min_draft = 1;
};

// One verification step, for telemetry (SpecStep) and the spec bench.
struct SpecStepInfo {
    std::vector<int32_t> drafted;
    std::vector<float> q, p;  // drafter's and target's probability of each drafted token
    int32_t accepted = 0;
    int32_t next = -1;  // the target's own token after the accepted ones
    NextKind kind = NextKind::Bonus;
    double draft_ms = 0, verify_ms = 0;
};
using SpecStepCallback = std::function<void(const SpecStepInfo&)>;

// Hooks for telemetry, in the order they happen; any may be empty.
struct SpecCallbacks {
    std::function<void()> on_prefilled;       // the prompt (but its last token) is cached
    std::function<void(int32_t)> on_drafted;  // a step's draft (n tokens) is ready
    SpecStepCallback on_step;                 // verified; its tokens are streamed next
    TokenCallback on_token;                   // as generate()'s
};

// Same contract as generate() (prefill, streaming, stop reasons, cancellation within one step),
// plus the speculative counters in GenerateResult. The prefill covers all but the prompt's last
// token, which the first verification step computes along with the first draft, so the first
// generated tokens are speculated too (TTFT includes that step). Steps that draft nothing are
// plain decode steps (one token).
GenerateResult generate_speculative(Sequence& seq, const tok::Tokenizer& tokenizer,
                                    std::span<const int32_t> prompt, Sampler& sampler,
                                    Drafter& drafter, const GenerateOptions& opt,
                                    const SpecOptions& spec, const SpecCallbacks& cb = {},
                                    const std::atomic<bool>* cancel = nullptr);

}  // namespace fluoro::spec
