// What the store gives back: a conversation with its messages and runs, each run with everything
// recorded during it, as plain values built from the telemetry event types — so replay, export
// and import all speak the engine's own vocabulary.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "telemetry/events.h"

namespace fluoro::app {

struct MessageRecord {
    int64_t id = 0;
    std::optional<int64_t> parent_id;
    std::string role, content;
    bool complete = false;  // false: generation was interrupted (or failed) before the end
    std::string created_at;
};

struct RunRecord {
    int64_t id = 0;
    int64_t message_id = 0;  // the assistant message the run produced
    std::string kind;
    std::string model_path, model_name, model_sha256;
    std::string settings_json, hardware_json;
    std::string program_version, telemetry_level, started_at;
    int64_t prompt_tokens = 0;
    std::vector<int32_t> prompt_ids;         // the prompt as the model saw it (RunStarted)
    std::vector<std::string> prompt_pieces;  // empty for runs recorded before schema v3
    std::optional<std::string> stop_reason;  // nullopt: the run never finished (process died)
    std::optional<std::string> error;
    int64_t n_tokens = 0, cached_tokens = 0, computed_tokens = 0, decode_steps = 0;
    double prefill_ms = 0, ttft_ms = 0, decode_ms = 0;
    int64_t duration_ns = 0;
    int64_t drafted_tokens = 0, accepted_tokens = 0;  // speculative decoding totals
    int64_t reasoning_tokens = 0, reasoning_ns = 0;   // RunFinished's (schema v6)

    std::vector<TokenEvent> tokens;
    std::vector<StepEvent> steps;
    std::vector<PrefixCacheEvent> cache_events;
    std::vector<MemoryCounters> memory;
    std::vector<SpecStep> spec_steps;
    std::vector<std::shared_ptr<const KvSnapshot>> kv_snapshots;
    std::vector<std::shared_ptr<const AttentionSnapshot>> attention_snapshots;
    std::vector<AttentionStats> attention_stats;
    std::vector<KvEviction> kv_evictions;  // the KV policy's evictions (schema v4)
    // A remote server's /metrics around the run (schema v11; remote runs only).
    std::vector<ServerLoadEvent> server_loads;
};

struct ConversationRecord {
    int64_t id = 0;
    std::string title, system_prompt, created_at;
    std::vector<MessageRecord> messages;  // in insertion order (parents first)
    std::vector<RunRecord> runs;          // in insertion order
};

struct ConversationSummary {
    int64_t id = 0;
    std::string title, created_at;
    int64_t messages = 0, runs = 0, incomplete = 0;
};

// A measurement run from the window (app/measure/measurement.h), as stored (schema v8).
struct MeasurementRecord {
    int64_t id = 0;
    std::string created_at, kind, model_path, headline;
    std::string params_json;  // {"key": "value", ...}
    std::string result_json;  // run_measurement's whole JSON
    double seconds = 0;
};

}  // namespace fluoro::app
