// Command-line flags shared by the `fluoro` commands that run a model: engine settings
// (threads, context, batch, KV type) and sampling settings, with llama.cpp-style names.
#pragma once

#include <CLI/CLI.hpp>

#include "sampling/sampling_params.h"
#include "session/loaded_model.h"

namespace fluoro::cli {

struct EngineFlags {
    app::EngineSettings engine;
    std::string kv_type = "f16";
    void add_to(CLI::App& cmd);
    app::EngineSettings settings() const;  // validates kv_type
};

struct SamplingFlags {
    SamplingParams params;
    void add_to(CLI::App& cmd);
};

}  // namespace fluoro::cli
