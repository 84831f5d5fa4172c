// The measurements' results as JSON: what `fluoro ppl --json`, `fluoro eval kv --json` and
// `fluoro bench spec --json` print and what the window stores (app/store, table measurements), one
// format for both, so a result looks the same wherever it was made.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "eval/kv_eval.h"
#include "eval/perplexity.h"
#include "eval/spec_bench.h"

namespace fluoro::app {

// {"ppl", "mean_nll", "scored_tokens", "chunks", "n_ctx", "running_ppl": [...], "seconds"}
nlohmann::json perplexity_json(const PerplexityResult& r, int64_t n_ctx);

// The cells of a KV eval: [{"policy", "budget", "kv_type", "errors", "ppl": {...}, "passkey":
// [...], "speed": [...]}, ...].
nlohmann::json kv_eval_cells_json(const std::vector<KvEvalCell>& cells);

// {"verify_cost", "verify_cost_in_loop", "verify_steps_in_loop", "target_token_ms", "rows",
// "prompts"}.
nlohmann::json spec_bench_json(const spec::SpecBenchResult& r);

}  // namespace fluoro::app
