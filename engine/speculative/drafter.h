// A drafter proposes the tokens it expects the target model to produce next; speculative
// generation (spec_generate.h) checks them all in one forward pass of the target. Drafters:
// prompt lookup (prompt_lookup.h), a second model (draft_model_drafter.h).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "sampling/sampling_params.h"
#include "sampling/token_dist.h"

namespace fluoro::spec {

struct Draft {
    std::vector<int32_t> ids;
    // q[i]: the distribution ids[i] was drawn from, after the same sampling transforms the
    // target's distribution gets (a point mass for deterministic drafters).
    std::vector<TokenDist> q;

    void clear() {
        ids.clear();
        q.clear();
    }
};

class Drafter {
  public:
    virtual ~Drafter() = default;
    // "prompt_lookup", "draft_model", ... (telemetry and bench names)
    virtual std::string_view name() const = 0;
    // Proposes at most max_n tokens to follow `context` (the prompt and every token emitted so
    // far, oldest first). `params` are the target's sampling settings: a drafter that samples
    // uses them, so its q has the same transforms as the target's p. May propose nothing.
    virtual void propose(std::span<const int32_t> context, int32_t max_n,
                         const SamplingParams& params, Draft& out) = 0;
};

}  // namespace fluoro::spec
