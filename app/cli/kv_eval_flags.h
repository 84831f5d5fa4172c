// The KV eval's measurement flags (eval/kv_eval.h), shared by `fluoro eval kv` and `fluoro eval
// attn`: which KV types and tasks, the text, the passkey and speed grids, the seed, threads and
// prefill batch.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "eval/kv_eval.h"
#include "measure/kv_eval_plan.h"

namespace fluoro::cli {

struct KvEvalFlags {
    std::string text;  // "": the Bible text
    app::KvEvalPlanText lists;
    KvEvalPlan plan;
    int threads = 0;
    int64_t batch = 512;

    // Adds --kv-types, --tasks, --ppl-tokens, --text, --passkey-lengths, --depths,
    // --passkey-format, --speed-contexts, --speed-gen, --seed, -t/--threads, -b/--batch, with the
    // defaults this object holds when called.
    void add_to(CLI::App& cmd);
};

}  // namespace fluoro::cli
