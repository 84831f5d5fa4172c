// `fluoro run MODEL PROMPT`: one prompt, the answer streamed to stdout, statistics to stderr.
#include <iostream>

#include "cli/commands.h"
#include "cli/engine_driver.h"
#include "cli/engine_flags.h"
#include "cli/interrupt.h"
#include "core/error.h"
#include "decode/chat_session.h"
#include "session/stats_line.h"

namespace fluoro::cli {

void add_run_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "run", "Answer one prompt, streamed (chat template applied unless --raw)");
    struct Opts {
        std::string model, prompt, system;
        bool raw = false, quiet = false;
        int64_t max_tokens = 512;
        EngineFlags engine;
        SamplingFlags sampling;
        SpecFlags spec;
        KvPolicyFlags kv;
        DriverOptions save;  // --save, --db, --telemetry
        std::string level = "full";
    };
    auto o = std::make_shared<Opts>();
    cmd->add_option("model", o->model, "GGUF model file")->required();
    cmd->add_option("prompt", o->prompt, "The prompt")->required();
    cmd->add_flag("--raw", o->raw, "Plain text completion: no chat template");
    cmd->add_option("--system", o->system, "System prompt (chat mode)");
    cmd->add_option("-n,--max-tokens", o->max_tokens, "Tokens to generate at most")
        ->capture_default_str();
    cmd->add_flag("-q,--quiet", o->quiet, "No statistics line");
    o->engine.add_to(*cmd);
    o->sampling.add_to(*cmd);
    o->spec.add_to(*cmd);
    o->kv.add_to(*cmd);
    add_save_flags(*cmd, o->save, o->level);
    cmd->callback([o] {
        // --save, --spec and --kv-policy run on the Engine (the GUI's path); a plain run calls
        // generate().
        if (o->save.save || o->spec.enabled() || o->kv.enabled()) {
            if (o->raw)
                throw Error(
                    "--save, --spec and --kv-policy run chats: they cannot be combined "
                    "with --raw");
            DriverOptions d = o->save;
            d.model = o->model;
            d.engine = o->engine;
            d.sampling = o->sampling;
            d.spec = o->spec;
            d.kv = o->kv;
            d.max_tokens = o->max_tokens;
            d.system = o->system;
            apply_level(d, o->level);
            EngineDriver driver(d);
            const RunFinished fin = driver.run(SendMessage{o->prompt});
            std::cout << '\n';
            if (fin.stop == "error") throw Error(fin.error);
            if (!o->quiet) {
                std::cerr << app::stats_line(result_of(fin));
                if (o->save.save)
                    std::cerr << " | saved as run " << driver.saved_run_id() << " of conversation "
                              << driver.saved_conversation_id();
                std::cerr << '\n';
            }
            return;
        }
        app::LoadedModel m = app::load_model(o->model, o->engine.settings());
        Sequence seq(*m.model, *m.kv, 0);
        const std::atomic<bool>& cancel = install_interrupt_flag();
        const auto print = [](const GeneratedToken& t) { std::cout << t.text << std::flush; };
        GenerateOptions gen;
        gen.max_tokens = o->max_tokens;
        GenerateResult r;
        if (o->raw) {
            Sampler sampler(o->sampling.params, int32_t(m.model->n_vocab()));
            const auto prompt = m.model->tokenizer().encode(o->prompt, true, false);
            std::cout << o->prompt << std::flush;
            r = generate(seq, m.model->tokenizer(), prompt, sampler, gen, print, &cancel);
        } else {
            ChatSession chat(*m.model, seq, o->sampling.params);
            if (chat.template_is_fallback())
                std::cerr << "warning: unknown chat template; using ChatML\n";
            if (!o->system.empty()) chat.set_system_prompt(o->system);
            r = chat.send(o->prompt, gen, print, &cancel);
        }
        std::cout << '\n';
        if (!o->quiet) std::cerr << app::stats_line(r) << '\n';
    });
}

}  // namespace fluoro::cli
