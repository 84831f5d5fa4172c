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
    std::string backend = "cpu";
    std::string kv_type = "f16";
    std::string attention{attention_impl_name(kDefaultAttentionImpl)};
    void add_to(CLI::App& cmd);
    app::EngineSettings settings() const;  // validates backend, kv_type and attention
};

// --spec, --draft-model, --draft-max, --exit-layer, --ngram-max
struct SpecFlags {
    std::string mode = "off";
    SpeculativeSettings settings;
    void add_to(CLI::App& cmd);
    SpeculativeSettings parsed() const;  // validates
    bool enabled() const { return mode != "off" && mode != "none"; }
};

struct SamplingFlags {
    SamplingParams params;
    void add_to(CLI::App& cmd);
};

}  // namespace fluoro::cli
