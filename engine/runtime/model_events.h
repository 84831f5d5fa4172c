// What both engines (runtime/engine.h, runtime/batch_engine.h) say about the model they run: its
// ModelLoaded event, the model side of a RunStarted, and the probes that read token texts for a
// run's telemetry.
#pragma once

#include <cstdint>
#include <string>

#include "kv/kv_cache.h"
#include "runtime/prefix_cache_persistence.h"
#include "runtime/run_telemetry.h"
#include "telemetry/events.h"

namespace fluoro {

class Backend;
class Model;
class ProfilingBackend;

// The ModelLoaded event of a model at `path` served with `kv` (its KV type, sizes and window)
// and a context of ctx tokens; `restored`: what the prefix cache file gave (empty: none).
ModelLoaded describe_loaded(const Model& model, const std::string& path, const Backend& backend,
                            const ProfilingBackend& profiling, KvTypes kv_type, int64_t ctx,
                            const KvCache& kv, const PrefixCachePersistence::Restored& restored);

// A RunStarted's model side — file, name, architecture, backend, KV type, threads, context and
// (unless rs.raw) the chat template.
void describe_model(RunStarted& rs, const Model& model, const std::string& model_path,
                    const Backend& backend, KvTypes kv_type, int64_t ctx);

// RunProbes::token_text and control_text from the model's tokenizer (it must outlive them).
void set_text_probes(RunProbes& p, const Model& model);

}  // namespace fluoro
