// `fluoro bench MODEL`: pp and tg throughput as llama-bench measures them (see eval/bench.h),
// as a table or --json. --depth D measures with D tokens already in the KV cache.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_features.h"
#include "cli/capture_bench.h"
#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "cli/telemetry_bench.h"
#include "common/format.h"
#include "common/version.h"
#include "core/error.h"
#include "eval/bench.h"
#include "kv/paged_kv.h"

namespace fluoro::cli {

void add_bench_command(CLI::App& app) {
    auto* cmd =
        app.add_subcommand("bench", "Measure prompt processing (pp) and generation (tg) speed");
    struct Opts {
        std::string model;
        BenchOptions bench;
        bool json = false;
        EngineFlags engine;
        std::string telemetry;
        std::string capture;
        int64_t capture_tokens = 4096;
        std::string kv_layout = "paged";
    };
    auto o = std::make_shared<Opts>();
    cmd->add_option("model", o->model, "GGUF model file");
    cmd->add_option("-p,--n-prompt", o->bench.n_prompt, "Prompt tokens (0 = skip pp)")
        ->capture_default_str();
    cmd->add_option("-n,--n-gen", o->bench.n_gen, "Generated tokens (0 = skip tg)")
        ->capture_default_str();
    cmd->add_option("-d,--depth", o->bench.depth,
                    "Tokens already in the KV cache when each test starts (prefilled, untimed)")
        ->capture_default_str();
    cmd->add_option("-r,--repetitions", o->bench.repetitions, "Repetitions after one warm-up")
        ->capture_default_str();
    cmd->add_flag("--json", o->json, "Print JSON");
    cmd->add_option("--telemetry", o->telemetry,
                    "Decode speed through the Engine at a telemetry level: " +
                        setting_help(telemetry_levels()) +
                        "; or compare (off, full and trace alternated; prints the overheads)");
    cmd->add_option("--capture", o->capture,
                    "compare: decode through the Engine with attention capture off and on "
                    "alternated, after a --capture-tokens prompt (needs a larger -c)");
    cmd->add_option("--capture-tokens", o->capture_tokens, "Prompt tokens for --capture")
        ->capture_default_str();
    cmd->add_option("--kv-layout", o->kv_layout,
                    "KV cache layout: paged (blocks of 16 tokens, each KV head's rows in a "
                    "region of their own), contiguous (one region per sequence), "
                    "paged-shuffled (blocks handed out in random order: the attention reads one "
                    "block per run), or paged-token-major (a slot's heads side by side, as before "
                    "the head-major layout and as the CUDA backend stores them)")
        ->check(CLI::IsMember({"paged", "contiguous", "paged-shuffled", "paged-token-major"}))
        ->capture_default_str();
    o->engine.add_to(*cmd);
    add_bench_spec_command(*cmd);
    add_bench_cache_command(*cmd);
    cmd->callback([o, cmd] {
        if (cmd->got_subcommand("spec") || cmd->got_subcommand("cache")) return;
        if (o->model.empty()) throw CLI::RequiredError("model");
        if (!o->capture.empty()) {
            if (o->capture != "compare") throw Error("--capture must be compare");
            CaptureBenchOptions c;
            c.model = o->model;
            c.prompt_tokens = o->capture_tokens;
            c.n_gen = o->bench.n_gen;
            c.repetitions = o->bench.repetitions;
            c.json = o->json;
            c.engine = o->engine;
            return run_capture_bench(c);
        }
        if (!o->telemetry.empty()) {
            TelemetryBenchOptions t;
            t.model = o->model;
            t.level = o->telemetry;
            t.n_gen = o->bench.n_gen;
            t.repetitions = o->bench.repetitions;
            t.json = o->json;
            t.engine = o->engine;
            return run_telemetry_bench(t);
        }
        app::EngineSettings s = o->engine.settings();
        s.ctx = std::max<int64_t>(1, bench_context(o->bench));
        app::LoadedModel m = app::load_model(o->model, s);
        KvShape kv_shape = m.kv->shape();
        const bool want_paged = o->kv_layout != "contiguous";
        const bool token_major = o->kv_layout == "paged-token-major";
        if (kv_shape.paged != want_paged || (token_major && kv_shape.head_major)) {
            kv_shape.paged = want_paged;
            if (token_major) kv_shape.head_major = false;
            m.kv.reset();  // free the first cache before the second is allocated
            m.kv = m.model->create_kv(kv_shape);
        }
        if (o->kv_layout == "paged-shuffled")
            if (auto* paged = dynamic_cast<PagedKvCache*>(m.kv.get()))
                paged->shuffle_free_blocks(o->bench.seed);
        const auto results = run_bench(*m.model, *m.kv, o->bench);
        const std::string model_name =
            m.model->file().get_string("general.name").value_or(o->model);
        if (o->json) {
            nlohmann::json j = {{"model", o->model},
                                {"model_name", model_name},
                                {"arch", m.model->hparams().arch},
                                {"threads", m.backend->threads()},
                                {"backend", std::string(m.backend->name())},
                                {"kernel_isa", cpu::kernel_isa_name()},
                                {"kv_type", kv_types_name(m.kv->shape().type)},
                                {"kv_layout", o->kv_layout},
                                {"batch", m.model->max_batch()},
                                {"attention", attention_impl_name(m.backend->attention_impl())},
                                {"attention_scratch_bytes", m.backend->attention_scratch_bytes()},
                                {"fluoro_version", app::version()},
                                {"results", nlohmann::json::array()}};
            for (const auto& r : results)
                j["results"].push_back({{"test", r.test},
                                        {"tokens", r.tokens},
                                        {"depth", r.depth},
                                        {"mean_tps", r.mean_tps},
                                        {"sd_tps", r.sd_tps},
                                        {"samples_tps", r.samples_tps},
                                        {"first_run_tps", r.first_run_tps}});
            std::cout << j.dump(2) << '\n';
            return;
        }
        std::printf(
            "| model | size | backend | threads | test | t/s | first run t/s |\n| --- | --- | "
            "--- | --- | --- | --- | --- |\n");
        for (const auto& r : results)
            std::printf("| %s | %s | %s | %d | %s | %.2f ± %.2f | %.2f |\n", model_name.c_str(),
                        app::format_bytes(m.model->file().file_size()).c_str(),
                        std::string(m.backend->name()).c_str(), m.backend->threads(),
                        r.test.c_str(), r.mean_tps, r.sd_tps, r.first_run_tps);
        if (!results.empty() && o->bench.depth == 0 && o->bench.n_prompt > 0)
            std::printf(
                "\nThe %s's first run is the process's first forward (cold): %.2fx the "
                "time of a warm one.\n",
                results[0].test.c_str(), results[0].mean_tps / results[0].first_run_tps);
    });
}

}  // namespace fluoro::cli
