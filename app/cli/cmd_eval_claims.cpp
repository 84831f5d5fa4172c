// `fluoro eval claims MODEL`: the founding documents' claims about inference measured on MODEL,
// each with its verdict (app/measure/claims.h) — the same measurement as the window's Measure →
// Textbook claims, printed as a table with the details under it, or the stored JSON (--json).
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "measure/claims.h"
#include "measure/measure_plots.h"
#include "measure/measurement.h"

namespace fluoro::cli {

void add_eval_claims_command(CLI::App& eval) {
    auto* cmd = eval.add_subcommand(
        "claims",
        "The textbook's claims (KV cache, FlashAttention, sliding windows, sinks, heavy hitters, "
        "speculative verification, prefix caching) measured on this model, with verdicts");
    struct Opts {
        std::string model;
        app::MeasureValues values;
        std::string only, text, positions, reps, draft_max, io_contexts, threads;
        bool json = false;
    };
    auto o = std::make_shared<Opts>();
    cmd->add_option("model", o->model, "GGUF model file")->required();
    cmd->add_option("--only", o->only, "Comma list of: " + app::claim_names());
    cmd->add_option("--positions", o->positions,
                    "kv_scaling: conversation lengths (default 64,128,256,512,1024,2048)");
    cmd->add_option("--reps", o->reps, "kv_scaling: timings per point (default 3)");
    cmd->add_option("--draft-max", o->draft_max, "verify_cost: k = 0 .. N (default 8)");
    cmd->add_option("--text", o->text,
                    "Text for the attention, sink and prefix claims (default: "
                    "/usr/share/common-licenses/GPL-3, else a filler sentence)");
    cmd->add_option("--io-contexts", o->io_contexts,
                    "flash_io: context lengths (default 512,1024,2048,4096)");
    cmd->add_option("-t,--threads", o->threads, "CPU threads (default: physical cores)");
    cmd->add_flag("--json", o->json, "Print the result as JSON (what the window stores)");
    cmd->callback([o] {
        app::MeasureValues v;
        for (const auto& [key, value] : {std::pair<const char*, std::string*>{"only", &o->only},
                                         {"positions", &o->positions},
                                         {"reps", &o->reps},
                                         {"draft-max", &o->draft_max},
                                         {"text", &o->text},
                                         {"io-contexts", &o->io_contexts},
                                         {"threads", &o->threads}})
            if (!value->empty()) v[key] = *value;
        app::MeasureControl control;
        control.progress = [](const std::string& what, double) {
            std::fprintf(stderr, "%s\n", what.c_str());
        };
        const nlohmann::json j =
            app::run_measurement({app::MeasureKind::Claims, o->model, v}, control);
        if (o->json) {
            std::cout << j.dump(2) << '\n';
            return;
        }
        const app::MeasureView view = app::measure_view(j);
        std::printf("%s\n\n", view.headline.c_str());
        for (const auto& row : view.table.rows)
            std::printf("%-15s %-37s %s\n", row[0].c_str(), row[1].c_str(), row[2].c_str());
        for (const app::MeasurePlot& p : view.plots) {
            std::printf("\n%s (%s):\n", p.title.c_str(), p.y_label.c_str());
            for (const app::PlotSeries& s : p.series) {
                std::printf("  %s:", s.name.c_str());
                for (const auto& [x, y] : s.points) std::printf(" %g→%.3g", x, y);
                std::printf("\n");
            }
        }
        if (!view.notes.empty()) std::printf("\n");
        for (const std::string& n : view.notes) std::printf("%s\n", n.c_str());
    });
}

}  // namespace fluoro::cli
