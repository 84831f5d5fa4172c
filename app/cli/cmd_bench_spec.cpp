// `fluoro bench spec MODEL`: speculative decoding's acceptance, tau and speedup per drafter and
// prompt category, with the measured costs and the speedup the paper's model expects (see
// engine/eval/spec_bench.h). Greedy, so the output is checked identical to plain decoding.
#include <cstdio>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "common/format.h"
#include "common/spec_prompt_file.h"
#include "core/error.h"
#include "eval/spec_bench.h"
#include "measure/bench_drafters.h"
#include "measure/measure_json.h"
#include "session/loaded_model.h"
#include "speculative/prompt_lookup.h"

namespace fluoro::cli {
namespace {

struct SpecBenchFlags {
    std::string model, draft_model;
    std::vector<std::string> drafters{std::string(spec_mode_name(SpecMode::PromptLookup))};
    std::vector<std::string> categories;
    std::string prompts_file;
    std::string save_tokens;           // file: each prompt's tokens and greedy output, for replays
    std::vector<int64_t> exit_layers;  // self_speculative: one drafter per exit layer (a sweep)
    float draft_p_min = SpeculativeSettings{}.draft_p_min;
    spec::SpecBenchOptions bench;
    spec::PromptLookupOptions lookup;
    bool json = false;
    EngineFlags engine;
};

// --save-tokens: what scripts/spec/replay_lookup.py reads. The counts are per repetition, so
// that a replay of the same drafter settings can check itself against them.
void save_tokens(const std::string& path, const SpecBenchFlags& o, const spec::SpecBenchResult& r) {
    nlohmann::json prompts = nlohmann::json::array();
    const auto reps = int64_t(o.bench.repetitions);
    for (const auto& x : r.prompts)
        prompts.push_back(
            {{"drafter", x.drafter},
             {"category", x.category},
             {"prompt", x.prompt},
             {"prompt_tokens", x.prompt_tokens},
             {"output_tokens", x.output_tokens},
             {"end_token", x.end_token ? nlohmann::json(*x.end_token) : nlohmann::json()},
             {"drafted", x.drafted / reps},
             {"accepted", x.accepted / reps},
             {"target_forwards", x.target_steps / reps}});
    const nlohmann::json j{{"model", o.model},
                           {"n_gen", o.bench.n_gen},
                           {"verify_cost", r.verify_cost},
                           {"draft_max", o.bench.spec.max_draft},
                           {"ngram_max", o.lookup.max_ngram},
                           {"ngram_min", o.lookup.min_ngram},
                           {"draft_max_unigram", o.lookup.max_draft_unigram},
                           {"prompts", prompts}};
    std::ofstream out(path);
    out << j.dump() << '\n';
    if (!out) throw Error("bench spec: cannot write --save-tokens file " + path);
}

void print_table(const spec::SpecBenchResult& r) {
    std::printf(
        "target decode: %.2f ms/token; verify cost v(k) = forward over k+1 tokens / over 1:",
        r.target_token_ms);
    for (size_t k = 0; k < r.verify_cost.size(); ++k)
        std::printf(" v(%zu)=%.2f", k, r.verify_cost[k]);
    std::printf(
        "\nin the decoding loop (a verification step / a plain step, each with its sampling; "
        "[steps]):");
    for (size_t k = 0; k < r.verify_cost_in_loop.size(); ++k)
        if (r.verify_steps_in_loop[k] > 0)
            std::printf(" v(%zu)=%.2f [%lld]", k, r.verify_cost_in_loop[k],
                        static_cast<long long>(r.verify_steps_in_loop[k]));
    std::printf("\n\n%-14s %-10s %6s %7s %7s %6s %6s %9s %9s %8s %7s %9s\n", "drafter", "category",
                "tokens", "copied", "accept", "tau", "gamma", "plain t/s", "spec t/s", "speedup",
                "c", "expected");
    for (const auto& x : r.rows)
        std::printf(
            "%-14s %-10s %6lld %6.1f%% %6.1f%% %6.2f %6.2f %9.1f %9.1f %7.2fx %7.3f %8.2fx\n",
            x.drafter.c_str(), x.category.c_str(), static_cast<long long>(x.tokens),
            100.0 * x.copied, 100.0 * x.acceptance, x.tau, x.mean_draft, x.plain_tps, x.spec_tps,
            x.speedup, x.draft_cost, x.expected_speedup);
    std::printf(
        "\nper prompt (copied: output tokens ending a %d-token run already in the context; ref: "
        "the same for a correct answer, where the prompt set has one)\n",
        int(spec::kCopiedRun));
    std::printf("%-14s %-10s %6s %6s %7s %7s %7s %6s %8s\n", "drafter", "category", "prompt",
                "tokens", "copied", "ref", "accept", "tau", "speedup");
    for (const auto& x : r.prompts) {
        char ref[16] = "-";
        if (x.reference_copied)
            std::snprintf(ref, sizeof ref, "%.1f%%", 100.0 * *x.reference_copied);
        std::printf("%-14s %-10s %6d %6lld %6.1f%% %7s %6.1f%% %6.2f %7.2fx\n", x.drafter.c_str(),
                    x.category.c_str(), x.prompt, static_cast<long long>(x.tokens),
                    100.0 * x.copied, ref, 100.0 * x.acceptance, x.tau, x.speedup);
    }
}

}  // namespace

void add_bench_spec_command(CLI::App& bench) {
    auto* cmd = bench.add_subcommand(
        "spec",
        "Measure speculative decoding: acceptance, tau, speedup per drafter and prompt set");
    auto o = std::make_shared<SpecBenchFlags>();
    cmd->add_option("model", o->model, "Target GGUF model")->required();
    cmd->add_option("--drafter", o->drafters,
                    "Drafters to measure: " + app::bench_drafter_names() +
                        " (draft_model needs --draft-model; self_speculative runs the model's "
                        "first --exit-layer layers)")
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("--draft-model", o->draft_model, "GGUF of the draft model (same vocabulary)");
    cmd->add_option("--exit-layer", o->exit_layers,
                    "self_speculative: layers the draft runs (comma list = a sweep; default half)")
        ->delimiter(',');
    cmd->add_option("--category", o->categories, "Prompt sets: copy, summarize, chat (default all)")
        ->delimiter(',');
    cmd->add_option(
        "--prompts", o->prompts_file,
        "Your own prompts instead of the built-in sets: one JSON object per line, "
        "{\"category\": ..., \"text\": ..., \"reference\": a correct answer (optional)}");
    cmd->add_option("-n,--n-gen", o->bench.n_gen, "Tokens generated per prompt")
        ->capture_default_str();
    cmd->add_option("-r,--repetitions", o->bench.repetitions, "Plain/speculative pairs per prompt")
        ->capture_default_str();
    cmd->add_option("--draft-max", o->bench.spec.max_draft, "Drafted tokens per step at most")
        ->capture_default_str();
    cmd->add_option("--ngram-max", o->lookup.max_ngram, "Prompt lookup: longest n-gram")
        ->capture_default_str();
    cmd->add_option("--draft-p-min", o->draft_p_min,
                    "draft_model / self_speculative: stop drafting where the draft's most likely "
                    "token has less than this probability (0 = off)")
        ->capture_default_str();
    cmd->add_flag("--json", o->json, "Print JSON");
    cmd->add_option("--save-tokens", o->save_tokens,
                    "Also write each prompt's tokens, greedy output and drafter counts, and the "
                    "verify costs, as JSON (for scripts/spec/replay_lookup.py)");
    o->engine.add_to(*cmd);
    cmd->callback([o] {
        o->bench.categories = o->categories;
        if (!o->prompts_file.empty()) o->bench.prompts = app::read_spec_prompts(o->prompts_file);
        app::EngineSettings s = o->engine.settings();
        s.logit_rows = int64_t(o->bench.spec.max_draft) + 1;
        app::LoadedModel target = app::load_model(o->model, s);
        o->lookup.max_draft = o->bench.spec.max_draft;
        app::BenchDrafterOptions dopt{o->drafters, o->draft_model, o->exit_layers, o->draft_p_min,
                                      o->lookup};
        const app::BenchDrafters owned = app::make_bench_drafters(dopt, target, s);
        const std::vector<spec::Drafter*> drafters = owned.list();
        const spec::SpecBenchResult r =
            spec::run_spec_bench(*target.model, *target.kv, drafters, o->bench);
        if (!o->save_tokens.empty()) save_tokens(o->save_tokens, *o, r);
        if (o->json) {
            nlohmann::json j = app::spec_bench_json(r);
            j["model"] = o->model;
            j["threads"] = target.backend->threads();
            j["n_gen"] = o->bench.n_gen;
            j["draft_max"] = o->bench.spec.max_draft;
            std::cout << j.dump(2) << '\n';
        } else {
            print_table(r);
        }
    });
}

}  // namespace fluoro::cli
