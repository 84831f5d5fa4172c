// `fluoro trace MODEL PROMPT -o trace.json`: answers one prompt at telemetry level trace (every
// backend call of every step, worker threads' spans; --level full for per-category times only)
// and writes the run as a Chrome trace (open it in ui.perfetto.dev or chrome://tracing); --save
// also stores it in the session database.
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/engine_driver.h"
#include "core/error.h"
#include "export/run_collector.h"
#include "export/trace_export.h"
#include "session/stats_line.h"

namespace fluoro::cli {

void add_trace_command(CLI::App& app) {
    auto* cmd =
        app.add_subcommand("trace", "Answer one prompt and export its profile as a Chrome trace");
    struct Opts {
        DriverOptions d;
        std::string prompt, output = "trace.json", level = "trace";
        bool quiet = false;
    };
    auto o = std::make_shared<Opts>();
    cmd->add_option("model", o->d.model, "GGUF model file")->required();
    cmd->add_option("prompt", o->prompt, "The prompt")->required();
    cmd->add_option("-o,--output", o->output, "Trace file")->capture_default_str();
    cmd->add_option("--system", o->d.system, "System prompt");
    cmd->add_option("-n,--max-tokens", o->d.max_tokens, "Tokens to generate at most")
        ->capture_default_str();
    cmd->add_flag("--save", o->d.save, "Also store the run in the session database");
    cmd->add_option("--db", o->d.db, "Session database (with --save)");
    cmd->add_option("--level", o->level, "Telemetry level: trace (every op) or full (categories)")
        ->capture_default_str();
    cmd->add_flag("-q,--quiet", o->quiet, "No statistics line");
    o->d.engine.add_to(*cmd);
    o->d.sampling.add_to(*cmd);
    o->d.spec.add_to(*cmd);  // draft and verify steps are traced like the others
    o->d.kv.add_to(*cmd);
    cmd->callback([o] {
        const auto level = parse_telemetry_level(o->level);
        if (level != TelemetryLevel::Trace && level != TelemetryLevel::Full)
            throw Error("--level must be trace or full, not '" + o->level + "'");
        o->d.level = *level;
        EngineDriver driver(o->d);
        app::RunCollector collector;
        driver.set_sink([&](const Event& e) { collector.add(e); });
        const RunFinished fin = driver.run(SendMessage{o->prompt});
        std::cout << '\n';
        if (fin.stop == "error") throw Error(fin.error);
        std::ofstream out(o->output, std::ios::binary | std::ios::trunc);
        out << app::run_to_chrome_trace(collector.run()).dump() << '\n';
        if (!out) throw Error("cannot write " + o->output);
        if (!o->quiet)
            std::cerr << app::stats_line(result_of(fin), fin.reasoning_tokens)
                      << " | trace: " << o->output << '\n';
    });
}

}  // namespace fluoro::cli
