// A model ready to run: its backend (CPU or CUDA), the loaded Model and a KV cache — what every
// `fluoro` command that computes needs, built from the shared command-line settings.
#pragma once

#include <filesystem>
#include <memory>

#include "backend/backend.h"
#include "backend/backend_kind.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "runtime/engine_commands.h"

namespace fluoro::app {

struct EngineSettings {
    BackendKind backend = BackendKind::Cpu;
    int threads = 0;         // 0 = physical cores
    int64_t ctx = 4096;      // tokens per sequence (clamped to the model's trained context)
    int64_t batch = 512;     // tokens per prefill step
    int64_t logit_rows = 1;  // logits rows one step may return
    KvTypes kv_type;         // keys' and values' types
    AttentionImpl attention = kDefaultAttentionImpl;
    MlaPath mla = MlaPath::Absorbed;          // ModelSettings::mla
    int64_t prefix_cache_slots = 0;           // ModelSettings::prefix_cache_slots
    std::filesystem::path prefix_cache_file;  // ModelSettings::prefix_cache_file (empty: none)
    bool swa_full = false;                    // ModelSettings::swa_full
};

struct LoadedModel {
    std::unique_ptr<Backend> backend;
    std::unique_ptr<Model> model;
    std::unique_ptr<KvCache> kv;
    int64_t ctx = 0;
};

// The engine's ModelSettings for these settings (what both engines load with).
ModelSettings model_settings(const EngineSettings& s);

// Throws fluoro::Error naming the file and the problem.
LoadedModel load_model(const std::filesystem::path& path, const EngineSettings& s);

}  // namespace fluoro::app
