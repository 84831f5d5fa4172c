// Speculative decoding as the user sets it (per conversation, through ChangeSettings or the CLI):
// which drafter (SpecMode and its traits: settings/settings.h) and its knobs. The Engine builds
// the drafter from these (engine.cpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

#include "settings/settings.h"  // SpecMode

namespace fluoro {

// Most tokens one step may draft (the logits buffer holds this many + 1 rows).
inline constexpr int32_t kMaxDraftTokens = 16;

struct SpeculativeSettings {
    SpecMode mode = SpecMode::Off;
    std::filesystem::path draft_model;  // DraftModel: a GGUF with the target's vocabulary
    int32_t exit_layer = 0;             // SelfSpeculative: layers the draft runs (0 = half)
    // 1 .. kMaxDraftTokens. 6: on the 2-core AVX2 host two more drafted tokens cost 0.52 of a
    // one-token forward from 4 to 6 and 0.83 from 6 to 8 (averaged over 11 runs' verify costs),
    // and replaying prompt lookup over SmolLM2's outputs at measured costs puts the best maximum
    // at 6 (docs/PERFORMANCE.md, "draft length").
    int32_t max_draft = 6;
    bool adaptive = true;   // draft length follows recent acceptance
    int32_t ngram_max = 3;  // PromptLookup: longest n-gram matched
    // DraftModel / SelfSpeculative: stop drafting where the draft's most likely token has less
    // than this probability (DraftModelDrafter::set_min_confidence; 0 = off). 0.75, llama.cpp's
    // default: self-speculative SmolLM2 (half its layers) measured 0.49-0.53x of plain decoding
    // at 0 and 0.52-0.59x at 0.75 across the prompt sets, better at 0.75 on each set in both of
    // two alternations (2026-12-02; docs/PERFORMANCE.md, "draft confidence").
    float draft_p_min = 0.75f;

    // Throws fluoro::Error naming the bad field.
    void validate() const;
};

}  // namespace fluoro
