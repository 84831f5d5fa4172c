// `fluoro eval attn MODEL`: the attention-variant table (measure/attn_eval.h): the file, its KV
// heads merged into one (MQA) by their mean and aligned first, its MLA conversions (--mla RANKS;
// both fitted to the text after what the tasks read, --calibrate-tokens) and any --variant
// NAME=FILE, each at each KV storage type — KV bytes per token, perplexity and its change against
// the first row, passkey retrieval, decode tok/s at long context. Prints the table the window's
// Measure ▸ Attention variants shows (measure/measure_plots.h), or --json. Progress goes to stderr.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/kv_eval_flags.h"
#include "common/format.h"
#include "core/error.h"
#include "measure/attn_eval.h"
#include "measure/kv_eval_plan.h"
#include "measure/measure_plots.h"

namespace fluoro::cli {
namespace {

struct EvalAttnOpts {
    std::string model, keep_dir;
    std::vector<std::string> variants;  // NAME=FILE
    std::vector<int64_t> mla_ranks;
    int64_t mla_rope_pairs = 0;
    int64_t calibrate_tokens = 2048;
    bool no_mqa = false, json = false;
    KvEvalFlags eval;

    EvalAttnOpts() {
        eval.lists.policies = "full";
        eval.lists.budgets = "100%";
        eval.lists.kv_types = "f16,q8_0,q4_0";
        eval.lists.passkey_lengths = "2048,4096";
        eval.lists.speed_contexts = "4096";
    }
};

void run_eval_attn(EvalAttnOpts& o) {
    app::AttnEvalOptions opt;
    opt.model = o.model;
    opt.extra = app::parse_variant_specs(o.variants, "--variant");  // before any work
    app::parse_kv_eval_plan(o.eval.lists, o.eval.plan);
    opt.plan = o.eval.plan;
    opt.mqa = !o.no_mqa;
    opt.mla_ranks = o.mla_ranks;
    opt.mla_rope_pairs = o.mla_rope_pairs;
    opt.calibrate_tokens = o.calibrate_tokens;
    opt.keep_dir = o.keep_dir;
    opt.text = o.eval.text;
    opt.passkey_format = o.eval.lists.passkey_format;
    opt.threads = o.eval.threads;
    opt.batch = o.eval.batch;
    const nlohmann::json result = app::run_attn_eval(
        opt, [](const std::string& msg) { std::fprintf(stderr, "eval attn: %s\n", msg.c_str()); });
    if (o.json) {
        std::cout << result.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
        return;
    }
    const app::MeasureView view = app::measure_view({{"kind", "eval_attn"}, {"result", result}});
    std::vector<std::vector<std::string>> rows{view.table.header};
    rows.insert(rows.end(), view.table.rows.begin(), view.table.rows.end());
    std::printf("%s\n", app::aligned_table(rows, 3).c_str());
    for (const std::string& n : view.notes) std::printf("%s\n", n.c_str());
}

}  // namespace

void add_eval_attn_command(CLI::App& eval) {
    auto o = std::make_shared<EvalAttnOpts>();
    auto* cmd = eval.add_subcommand(
        "attn",
        "Attention variants of one model (the file, its MQA merge, your conversions) x KV types: "
        "KV bytes per token, perplexity, passkey retrieval, decode speed");
    cmd->add_option("model", o->model, "GGUF model file")->required();
    cmd->add_option("--variant", o->variants,
                    "Another variant to measure, NAME=FILE (repeatable; e.g. a converted file)");
    cmd->add_flag("--no-mqa", o->no_mqa, "Do not measure the file's KV heads merged into one");
    cmd->add_option("--mla", o->mla_ranks,
                    "Also measure the file converted to latent attention (convert --mla-rank) at "
                    "each of these latent ranks (comma list)")
        ->delimiter(',');
    cmd->add_option("--mla-rope-pairs", o->mla_rope_pairs,
                    "Rotary pairs per KV head the MLA conversions keep (0: head_dim / 8)")
        ->capture_default_str();
    cmd->add_option("--calibrate-tokens", o->calibrate_tokens,
                    "The aligned MQA merge and the MLA conversions fit to the keys and values the "
                    "model produces on this many tokens of the text, after every token a task "
                    "reads (0: fit to the weights)")
        ->capture_default_str();
    cmd->add_option("--keep-dir", o->keep_dir,
                    "Write the conversions here as MODEL.mqa-mean.gguf, MODEL.mqa-aligned.gguf, "
                    "MODEL.mla-rR.gguf and keep them (default: temporary files, removed)");
    o->eval.add_to(*cmd);
    cmd->add_flag("--json", o->json, "Print JSON instead of the table");
    cmd->callback([o] { run_eval_attn(*o); });
}

}  // namespace fluoro::cli
