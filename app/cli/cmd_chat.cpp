// `fluoro chat MODEL`: an interactive multi-turn chat in the terminal. Each turn reuses the KV
// of the conversation so far; Ctrl-C stops the current answer, Ctrl-D or /bye quits.
#include <iostream>
#include <optional>

#include "cli/chat_commands.h"
#include "cli/commands.h"
#include "cli/engine_driver.h"
#include "cli/engine_flags.h"
#include "cli/interrupt.h"
#include "core/error.h"
#include "session/stats_line.h"

namespace fluoro::cli {
namespace {

struct ChatOpts {
    std::string model, system;
    int64_t max_tokens = 1024;
    bool quiet = false;
    EngineFlags engine;
    SamplingFlags sampling;
    SpecFlags spec;
    KvPolicyFlags kv;
    DriverOptions save;  // --save, --db, --telemetry
    std::string level = "full";
};

// The chat runs on the Engine's thread (the GUI's path); with --save every turn is stored as it
// streams.
void chat_loop(CLI::App& app, const ChatOpts& o) {
    DriverOptions d = o.save;
    d.model = o.model;
    d.engine = o.engine;
    d.sampling = o.sampling;
    d.spec = o.spec;
    d.kv = o.kv;
    d.max_tokens = o.max_tokens;
    d.system = o.system;
    apply_level(d, o.level);
    // Telemetry nobody stores or asked for is not computed: answers come as fast as they can.
    if (!o.save.save && app.count("--telemetry") == 0) d.level = TelemetryLevel::Off;
    EngineDriver driver(d);
    std::cerr << "fluoro chat: " << driver.model().name << " (" << driver.model().arch << ", "
              << driver.model().ctx << " tokens of context, " << driver.model().threads
              << " threads)";
    if (o.save.save) std::cerr << ", saving to " << driver.db_path().string();
    if (o.spec.enabled()) std::cerr << ", speculative: " << o.spec.mode;
    if (o.kv.enabled()) std::cerr << ", KV policy: " << o.kv.policy;
    std::cerr << ". /help for commands.\n";
    if (driver.model().chat_template_fallback)
        std::cerr << "warning: " << driver.model().chat_template_note << '\n';
    ChatState state;
    state.sampling = o.sampling.params;
    state.max_tokens = o.max_tokens;
    state.system = o.system;
    std::atomic<bool>& cancel = install_interrupt_flag();
    for (;;) {
        std::cout << "> " << std::flush;
        std::string line;
        cancel.store(false);
        if (!std::getline(std::cin, line)) {
            if (cancel.load() && !std::cin.eof()) {  // Ctrl-C at the prompt
                std::cin.clear();
                std::cout << "\n(Ctrl-D or /bye to quit)\n";
                continue;
            }
            std::cout << '\n';
            return;
        }
        if (line.empty()) continue;
        ChatCommandResult cmd = run_chat_command(line, state);
        if (cmd.quit) return;
        std::optional<Command> run;
        if (!cmd.handled) {
            run = SendMessage{line};
        } else if (cmd.command && std::holds_alternative<Regenerate>(*cmd.command)) {
            run = std::move(cmd.command);
        } else {
            try {
                if (cmd.command) driver.apply(std::move(*cmd.command));
                std::cout << cmd.message << '\n';
            } catch (const Error& e) {
                std::cout << "error: " << e.what() << '\n';
            }
            continue;
        }
        // A failed turn is reported by the driver and leaves the conversation as it was.
        const RunFinished fin = driver.run(std::move(*run));
        std::cout << '\n';
        if (fin.stop == "error") continue;
        if (fin.stop == "cancelled") std::cout << "(stopped)\n";
        state.last = fin;
        if (!o.quiet) std::cerr << app::stats_line(result_of(fin), fin.reasoning_tokens) << '\n';
    }
}

}  // namespace

void add_chat_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("chat", "Interactive multi-turn chat");
    auto o = std::make_shared<ChatOpts>();
    cmd->add_option("model", o->model, "GGUF model file")->required();
    cmd->add_option("--system", o->system, "System prompt");
    cmd->add_option("-n,--max-tokens", o->max_tokens, "Tokens per answer at most")
        ->capture_default_str();
    cmd->add_flag("-q,--quiet", o->quiet, "No statistics line after answers");
    o->engine.add_to(*cmd);
    o->sampling.add_to(*cmd);
    o->spec.add_to(*cmd);
    o->kv.add_to(*cmd);
    add_save_flags(*cmd, o->save, o->level);
    cmd->callback([o, cmd] { chat_loop(*cmd, *o); });
}

}  // namespace fluoro::cli
