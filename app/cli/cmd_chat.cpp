// `fluoro chat MODEL`: an interactive multi-turn chat in the terminal. Each turn reuses the KV
// of the conversation so far; Ctrl-C stops the current answer, Ctrl-D or /bye quits.
#include <iostream>

#include "cli/chat_commands.h"
#include "cli/commands.h"
#include "cli/engine_driver.h"
#include "cli/engine_flags.h"
#include "cli/interrupt.h"
#include "core/error.h"
#include "decode/chat_session.h"
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

// `--save`: the chat runs on the Engine's thread and every turn is stored as it streams.
void saved_chat_loop(const ChatOpts& o) {
    DriverOptions d = o.save;
    d.model = o.model;
    d.engine = o.engine;
    d.sampling = o.sampling;
    d.spec = o.spec;
    d.kv = o.kv;
    d.max_tokens = o.max_tokens;
    d.system = o.system;
    apply_level(d, o.level);
    EngineDriver driver(d);
    std::cerr << "fluoro chat: " << driver.model().name << " (" << driver.model().arch << ", "
              << driver.model().ctx << " tokens of context, " << driver.model().threads
              << " threads)";
    if (o.save.save) std::cerr << ", saving to " << driver.db_path().string();
    if (o.spec.enabled()) std::cerr << ", speculative: " << o.spec.mode;
    if (o.kv.enabled()) std::cerr << ", KV policy: " << o.kv.policy;
    std::cerr << ". /regen, /reset, /bye.\n";
    std::atomic<bool>& cancel = install_interrupt_flag();
    for (;;) {
        std::cout << "> " << std::flush;
        std::string line;
        cancel.store(false);
        if (!std::getline(std::cin, line)) {
            if (cancel.load() && !std::cin.eof()) {
                std::cin.clear();
                std::cout << "\n(Ctrl-D or /bye to quit)\n";
                continue;
            }
            std::cout << '\n';
            return;
        }
        if (line.empty()) continue;
        if (line == "/bye" || line == "/quit" || line == "/exit") return;
        if (line == "/reset") {
            driver.new_conversation();
            std::cout << "(new conversation)\n";
            continue;
        }
        if (line.starts_with('/') && line != "/regen") {
            std::cout << "with --save, --spec or --kv-policy only /regen, /reset and /bye are "
                         "available\n";
            continue;
        }
        const RunFinished fin =
            line == "/regen" ? driver.run(Regenerate{}) : driver.run(SendMessage{line});
        std::cout << '\n';
        if (fin.stop == "cancelled") std::cout << "(stopped)\n";
        if (!o.quiet && fin.stop != "error") std::cerr << app::stats_line(result_of(fin)) << '\n';
    }
}

void chat_loop(const ChatOpts& o) {
    app::LoadedModel m = app::load_model(o.model, o.engine.settings());
    Sequence seq(*m.model, *m.kv, 0);
    ChatSession chat(*m.model, seq, o.sampling.params);
    if (!o.system.empty()) chat.set_system_prompt(o.system);
    std::atomic<bool>& cancel = install_interrupt_flag();
    GenerateOptions gen;
    gen.max_tokens = o.max_tokens;
    std::cerr << "fluoro chat: " << m.model->file().name() << " (" << m.model->hparams().arch
              << ", " << m.ctx << " tokens of context, " << m.backend->threads()
              << " threads). /help for commands.\n";
    if (chat.template_is_fallback()) std::cerr << "warning: unknown chat template; using ChatML\n";
    GenerateResult last;
    bool have_last = false;
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
        const ChatCommandResult cmd =
            run_chat_command(line, chat, have_last ? &last : nullptr, gen);
        if (cmd.quit) return;
        if (cmd.handled) {
            std::cout << cmd.message << '\n';
            continue;
        }
        try {
            last = chat.send(
                line, gen, [](const GeneratedToken& t) { std::cout << t.text << std::flush; },
                &cancel);
            have_last = true;
            std::cout << '\n';
            if (last.stop == StopReason::Cancelled) std::cout << "(stopped)\n";
            if (!o.quiet) std::cerr << app::stats_line(last) << '\n';
        } catch (const Error& e) {
            std::cout << '\n';
            std::cerr << "error: " << e.what() << '\n';  // the session stays usable
        }
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
    cmd->callback([o] {
        if (o->save.save || o->spec.enabled() || o->kv.enabled())  // the Engine's path
            saved_chat_loop(*o);
        else
            chat_loop(*o);
    });
}

}  // namespace fluoro::cli
