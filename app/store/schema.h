// The session database's schema and its migrations. A file is ours when its application_id is
// kApplicationId; its user_version is the schema version. A new database is created at version 1
// and migrated step by step like any old one, so every migration runs in every test.
//
//   v1  conversations -> messages (a tree: parent_id) -> runs -> tokens, steps, snapshots,
//       spec_events, cache_events
//   v2  + memory_counters per run, + model_hashes (sha256 cache keyed by path, size, mtime)
//   v3  + runs.prompt_ids/prompt_pieces/drafted_tokens/accepted_tokens, + snapshots.key_begin,
//       + spec_events.bonus/draft_ns/verify_ns, + attention_stats per run
//   v4  + kv_evictions per run (the KV policy's evictions: kept/evicted positions, reasons)
//   v5  + cache_events.source/diverge_at/diverge_prompt_token/diverge_cached_token/
//       diverge_cached_piece///       evicted_entries/cache_entries/cache_tokens (the prompt
//       cache's per-request telemetry)
//   v6  + tokens.split/reasoning/reasoning_text/answer_text, runs.reasoning_tokens/reasoning_ns
//   v7  + steps.experts (a mixture-of-experts step's routing)
//   v8  + measurements (perplexity, KV-policy evals, speculative benchmarks run from the window:
//       what was asked and the result as JSON, app/measure/measurement.h)
//   v9  + cache_events.tree (the prefix cache's radix tree after the request, as JSON,
//       store/prefix_tree_codec.h)
//   v10 + steps.trace (telemetry level Trace: the step's op spans and worker spans)
//
// docs/STORAGE.md describes every table and blob layout.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "store/sqlite_db.h"

namespace fluoro::app {

inline constexpr int kSchemaVersion = 11;
inline constexpr int32_t kApplicationId = 0x464C5553;  // "FLUS"

// The SQL that creates schema version 1 (also used by the migration test to build an old file).
const char* schema_v1_sql();
// The SQL that migrates version 1 to 2 (the migration test builds a version 2 file with both).
const char* migrate_v1_to_v2_sql();
// The SQL that migrates version 2 to 3 (the migration test builds a version 3 file with the three).
const char* migrate_v2_to_v3_sql();

// Opens (creating it and its directory when absent) the session database at `path`, checks that
// it is ours, readable and not from a newer version — without writing to it when it is not —
// then turns on WAL and foreign keys and migrates it to kSchemaVersion. Throws StoreError naming
// the file and the problem.
std::unique_ptr<Database> open_session_db(const std::filesystem::path& path);

}  // namespace fluoro::app
