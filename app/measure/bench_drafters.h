// The drafters a speculative-decoding benchmark measures (`fluoro bench spec --drafter`, the
// window's Measure → Speculative decoding): prompt lookup, a draft model (its own GGUF, same
// vocabulary) and self-speculation (the target's first layers; one drafter per exit layer, so a
// list is a sweep), each with its own KV cache.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "session/loaded_model.h"
#include "speculative/drafter.h"
#include "speculative/prompt_lookup.h"

namespace fluoro::app {

struct BenchDrafterOptions {
    std::vector<std::string> names;     // spec modes that draft
    std::filesystem::path draft_model;  // draft_model's GGUF
    std::vector<int64_t> exit_layers;   // self_speculative (empty: half the layers)
    float draft_p_min = 0;              // draft_model / self_speculative confidence cut
    spec::PromptLookupOptions lookup;
};

struct BenchDrafters {
    // Destroyed in reverse: the drafters before the caches and the model they use.
    std::unique_ptr<Model> draft_model;
    std::vector<std::unique_ptr<KvCache>> kvs;
    std::vector<std::unique_ptr<spec::Drafter>> owned;
    std::vector<spec::Drafter*> list() const;
};

// Throws Error for an unknown name, draft_model without a file, a draft model whose vocabulary
// differs from the target's.
BenchDrafters make_bench_drafters(const BenchDrafterOptions& opt, LoadedModel& target,
                                  const EngineSettings& s);

// The spec modes that draft: "prompt_lookup, draft_model, self_speculative".
std::string bench_drafter_names();

}  // namespace fluoro::app
