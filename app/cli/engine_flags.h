// Command-line flags shared by the `fluoro` commands that run a model: engine settings
// (backend, threads, context, batch, KV type, attention implementation) and sampling settings, with
// llama.cpp-style names.
#pragma once

#include <CLI/CLI.hpp>

#include "sampling/sampling_params.h"
#include "session/loaded_model.h"
#include "speculative/spec_settings.h"

namespace fluoro::cli {

struct EngineFlags {
    app::EngineSettings engine;
    // The engine's defaults (app::EngineSettings follows ModelSettings).
    std::string backend{backend_kind_name(app::EngineSettings{}.backend)};
    std::string kv_type{kv_type_name(app::EngineSettings{}.kv_type.k)};
    std::string kv_type_k, kv_type_v;  // empty: --kv-type's
    std::string attention{attention_impl_name(app::EngineSettings{}.attention)};
    std::string mla{mla_path_name(app::EngineSettings{}.mla)};
    void add_to(CLI::App& cmd);
    app::EngineSettings settings() const;  // validates backend, KV types and attention
};

// --spec, --draft-model, --draft-max, --exit-layer, --ngram-max
struct SpecFlags {
    std::string mode{spec_mode_name(SpeculativeSettings{}.mode)};
    SpeculativeSettings settings;
    void add_to(CLI::App& cmd);
    SpeculativeSettings parsed() const;  // validates
    bool enabled() const {
        const std::optional<SpecMode> m = parse_spec_mode(mode);
        return !m || spec_mode_info(*m).drafts;  // an unknown name: parsed() says what is wrong
    }
};

struct SamplingFlags {
    SamplingParams params;
    void add_to(CLI::App& cmd);
};

}  // namespace fluoro::cli
