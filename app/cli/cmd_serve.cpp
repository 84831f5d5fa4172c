// `fluoro serve MODEL`: an OpenAI-compatible HTTP server (app/server/openai_server.h) over one
// EngineDriver, so --save stores every request like a chat. Ctrl-C or SIGTERM stops it.
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include "cli/commands.h"
#include "cli/engine_driver.h"
#include "cli/engine_flags.h"
#include "cli/interrupt.h"
#include "core/error.h"
#include "server/openai_server.h"

namespace fluoro::cli {
namespace {

std::atomic<bool> g_terminate{false};

extern "C" void on_sigterm(int) {
    g_terminate.store(true);
}

}  // namespace

void add_serve_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "serve", "Serve an OpenAI-compatible API (/v1/chat/completions, /v1/models) over HTTP");
    struct Opts {
        std::string model, host = "127.0.0.1", api_key;
        int port = 8080;
        size_t max_body = size_t(1) << 20;
        int max_queue = 16;
        int64_t max_tokens = 512;
        EngineFlags engine;
        SamplingFlags sampling;
        SpecFlags spec;
        KvPolicyFlags kv;
        DriverOptions save;  // --save, --db, --telemetry
        std::string level = "summary";
    };
    auto o = std::make_shared<Opts>();
    o->engine.engine.prefix_cache_slots = 8;  // agents resend system prompts and tools
    cmd->add_option("model", o->model, "GGUF model file")->required();
    cmd->add_option("--host", o->host, "Address to listen on")->capture_default_str();
    cmd->add_option("--port", o->port, "Port to listen on (0: any free one)")
        ->capture_default_str();
    cmd->add_option("--api-key", o->api_key,
                    "Require 'Authorization: Bearer KEY' on every request");
    cmd->add_option("--max-body", o->max_body, "Largest request body in bytes (larger: 413)")
        ->capture_default_str();
    cmd->add_option("--max-queue", o->max_queue,
                    "Requests that may wait behind the running one (more: 429)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("-n,--max-tokens", o->max_tokens,
                    "Tokens per reply at most when a request does not say")
        ->capture_default_str();
    o->engine.add_to(*cmd);
    o->sampling.add_to(*cmd);
    o->spec.add_to(*cmd);
    o->kv.add_to(*cmd);
    add_save_flags(*cmd, o->save, o->level);
    cmd->callback([o] {
        DriverOptions d = o->save;
        d.model = o->model;
        d.engine = o->engine;
        d.sampling = o->sampling;
        d.spec = o->spec;
        d.kv = o->kv;
        d.max_tokens = o->max_tokens;
        d.print_tokens = false;
        apply_level(d, o->level);
        EngineDriver driver(d);

        app::ServerOptions so;
        so.model_id = std::filesystem::path(o->model).filename().string();
        so.api_key = o->api_key;
        so.max_body = o->max_body;
        so.max_queue = o->max_queue;
        so.sampling = o->sampling.params;
        app::CompletionBackend backend;
        backend.run = [&driver](Complete c, const std::function<void(const Event&)>& on_event) {
            driver.set_sink(on_event);
            RunFinished f = driver.run(std::move(c));
            driver.set_sink(nullptr);
            return f;
        };
        backend.cancel = [&driver] { driver.engine().cancel(); };
        app::OpenAiServer server(so, backend);
        const int port = server.start(o->host, o->port);
        std::cerr << "serving " << so.model_id << " on http://" << o->host << ':' << port
                  << "/v1 (Ctrl-C stops)" << std::endl;

        std::atomic<bool>& interrupted = install_interrupt_flag();
        std::signal(SIGTERM, on_sigterm);
        while (!interrupted.load() && !g_terminate.load())
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        std::cerr << "stopping" << std::endl;
        server.stop();
    });
}

}  // namespace fluoro::cli
