#include "speculative/spec_settings.h"

#include <string>

#include "core/error.h"

namespace fluoro {

void SpeculativeSettings::validate() const {
    if (max_draft < 1 || max_draft > kMaxDraftTokens)
        throw Error("speculative: max_draft " + std::to_string(max_draft) + " must be in [1, " +
                    std::to_string(kMaxDraftTokens) + "]");
    if (exit_layer < 0)
        throw Error("speculative: exit_layer " + std::to_string(exit_layer) + " must be >= 0");
    if (ngram_max < 1) throw Error("speculative: ngram_max must be at least 1");
    if (!(draft_p_min >= 0.0f && draft_p_min < 1.0f))
        throw Error("speculative: draft_p_min " + std::to_string(draft_p_min) +
                    " must be in [0, 1)");
    if (mode == SpecMode::DraftModel && draft_model.empty())
        throw Error("speculative: mode draft_model needs a draft model file");
}

}  // namespace fluoro
