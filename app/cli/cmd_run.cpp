// `fluoro run MODEL PROMPT`: one prompt, the answer streamed to stdout, statistics to stderr.
#include <cstdlib>
#include <iostream>
#include <optional>

#include "cli/commands.h"
#include "cli/engine_driver.h"
#include "cli/engine_flags.h"
#include "core/error.h"
#include "remote/prometheus_text.h"
#include "remote/remote_chat.h"
#include "session/expert_load.h"
#include "session/prompt_listing.h"
#include "session/stats_line.h"

namespace fluoro::cli {

namespace {

// `fluoro run --remote URL NAME PROMPT`: the chat turn sent to a server, streamed back.
template <class Opts>
void run_remote(const Opts& o, const CLI::App& cmd) {
    for (const char* local :
         {"--raw", "--json-object", "--show-prompt", "--show-experts", "--save", "--spec"})
        if (cmd.count(local) != 0)
            throw Error(std::string(local) +
                        " needs the local engine: it cannot be combined "
                        "with --remote");
    app::RemoteEndpoint endpoint = app::parse_endpoint(o.remote);
    endpoint.ca_file = o.ca_file;
    app::RemoteRequest req;
    req.model = o.model;
    if (!o.system.empty()) req.messages.emplace_back("system", o.system);
    req.messages.emplace_back("user", o.prompt);
    req.max_tokens = o.max_tokens;
    if (cmd.count("--temp") != 0) req.temperature = o.sampling.params.temperature;
    if (cmd.count("--seed") != 0) req.seed = o.sampling.params.seed;
    if (const char* key = std::getenv(o.api_key_env.c_str())) req.api_key = key;
    // The server's load before and after, when asked; a server without /metrics says so and the
    // answer goes on.
    const auto load = [&]() -> std::optional<app::ServerLoad> {
        try {
            return app::server_load(
                app::parse_prometheus_text(app::fetch_text(endpoint, "/metrics", req.api_key)));
        } catch (const Error& e) {
            std::cerr << "server: no metrics: " << e.what() << '\n';
            return std::nullopt;
        }
    };
    const std::optional<app::ServerLoad> before =
        o.remote_metrics ? load() : std::optional<app::ServerLoad>();
    const app::RemoteResult r = app::stream_chat(
        endpoint, req, [](const app::RemoteChunk& c) { std::cout << c.text << std::flush; });
    std::cout << '\n';
    if (!o.quiet) std::cerr << app::remote_stats_line(endpoint, r) << '\n';
    if (before)
        if (const std::optional<app::ServerLoad> after = load())
            std::cerr << app::server_load_line(*before, *after) << '\n';
}

}  // namespace

void add_run_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "run", "Answer one prompt, streamed (chat template applied unless --raw)");
    struct Opts {
        std::string model, prompt, system;
        bool raw = false, quiet = false, show_prompt = false, show_experts = false;
        bool json_object = false;
        int64_t max_tokens = 512;
        EngineFlags engine;
        SamplingFlags sampling;
        SpecFlags spec;
        KvPolicyFlags kv;
        DriverOptions save;  // --save, --db, --telemetry
        std::string level = "full";
        std::string remote, ca_file, api_key_env = "OPENAI_API_KEY";
        bool remote_metrics = false;
    };
    auto o = std::make_shared<Opts>();
    cmd->add_option("model", o->model, "GGUF model file (with --remote: the served model's name)")
        ->required();
    cmd->add_option("prompt", o->prompt, "The prompt")->required();
    cmd->add_flag("--raw", o->raw, "Plain text completion: no chat template");
    cmd->add_option("--system", o->system, "System prompt (chat mode)");
    cmd->add_option("-n,--max-tokens", o->max_tokens, "Tokens to generate at most")
        ->capture_default_str();
    cmd->add_flag("-q,--quiet", o->quiet, "No statistics line");
    cmd->add_flag("--json-object", o->json_object,
                  "The answer is one JSON object: every step's tokens masked to those that keep "
                  "it valid, the run ending when it closes (the API's response_format "
                  "json_object; no speculative decoding)");
    cmd->add_flag("--show-prompt", o->show_prompt,
                  "Print the prompt as the model sees it, token by token (ids, special tokens "
                  "marked), to stderr before the answer");
    cmd->add_flag("--show-experts", o->show_experts,
                  "A mixture-of-experts model: after the answer, how the tokens (prompt and "
                  "answer) were routed — each layer's experts by share of its choices — to "
                  "stderr");
    cmd->add_option("--remote", o->remote,
                    "Ask an OpenAI-compatible server instead of loading the model here (vLLM, "
                    "SGLang, llama-server, Ollama, fluoro serve): http://host:port[/v1]. The "
                    "answer streams to stdout; stderr gets the server's token counts, time to "
                    "first token and the intervals between chunks as they arrived here. Only "
                    "--system, -n, --temp and --seed (when given) are sent. https checks the "
                    "server's certificate against the system's CA certificates (or --ca-file)");
    cmd->add_option("--ca-file", o->ca_file,
                    "With an https --remote: PEM CA certificates to trust instead of the "
                    "system's (a private CA, a self-signed server)");
    cmd->add_flag("--metrics", o->remote_metrics,
                  "With --remote: read the server's /metrics (Prometheus text, vLLM's names) "
                  "before and after, and print its load: requests running and waiting, KV cache "
                  "use, prefix-cache hits and tokens during this request");
    cmd->add_option("--api-key-env", o->api_key_env,
                    "With --remote: the environment variable holding the server's API key "
                    "(sent as a Bearer token; never stored)")
        ->capture_default_str();
    o->engine.add_to(*cmd);
    o->sampling.add_to(*cmd);
    o->spec.add_to(*cmd);
    o->kv.add_to(*cmd);
    add_save_flags(*cmd, o->save, o->level);
    cmd->callback([o, cmd] {
        if (o->raw && !o->system.empty())
            throw Error("--system sets a chat's system prompt: it cannot be combined with --raw");
        if (!o->remote.empty()) return run_remote(*o, *cmd);
        // Every run goes through the Engine, the GUI's path: one generation code for all.
        DriverOptions d = o->save;
        d.model = o->model;
        d.engine = o->engine;
        d.sampling = o->sampling;
        d.spec = o->spec;
        d.kv = o->kv;
        d.max_tokens = o->max_tokens;
        d.system = o->system;
        apply_level(d, o->level);
        // Nobody reads the telemetry of a run that is not saved unless asked for: at level Off
        // the engine computes none of it, and a plain run is as fast as generate() alone.
        if (!o->save.save && cmd->count("--telemetry") == 0) d.level = TelemetryLevel::Off;
        if (o->show_experts && d.level == TelemetryLevel::Off) {
            if (cmd->count("--telemetry") != 0)
                throw Error(
                    "--show-experts reads the run's telemetry: it needs --telemetry "
                    "summary or full, not off");
            d.level = TelemetryLevel::Summary;  // the routing rides on the steps' events
        }
        EngineDriver driver(d);
        auto experts = std::make_shared<app::ExpertLoad>();
        if (o->show_prompt || o->show_experts) {
            driver.set_sink([o, experts](const Event& e) {
                if (const auto* r = std::get_if<RunStarted>(&e); r && o->show_prompt)
                    std::cerr << app::prompt_listing(*r) << std::flush;
                if (o->show_experts) experts->add(e);
            });
        }
        Command run = SendMessage{o->prompt};
        if (o->raw || o->json_object) {
            Complete c{{{"user", o->prompt}}};
            if (!o->raw && !o->system.empty())
                c.messages.insert(c.messages.begin(), {"system", o->system});
            c.raw = o->raw;
            c.json_object = o->json_object;
            run = std::move(c);
            if (o->raw) std::cout << o->prompt << std::flush;  // the completion continues it
        }
        if (!o->raw && driver.model().chat_template_fallback)
            std::cerr << "warning: " << driver.model().chat_template_note << '\n';
        const RunFinished fin = driver.run(std::move(run));
        std::cout << '\n';
        if (fin.stop == "error") throw Error(fin.error);
        if (o->show_experts)
            std::cerr << (experts->empty() ? "experts: none (" + driver.model().arch +
                                                 " here is not a mixture of experts)\n"
                                           : experts->format());
        if (!o->quiet) {
            std::cerr << app::stats_line(result_of(fin), fin.reasoning_tokens);
            if (o->save.save)
                std::cerr << " | saved as run " << driver.saved_run_id() << " of conversation "
                          << driver.saved_conversation_id();
            std::cerr << '\n';
        }
    });
}

}  // namespace fluoro::cli
