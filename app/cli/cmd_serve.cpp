// `fluoro serve MODEL`: an OpenAI-compatible HTTP server (app/server/openai_server.h) over
// continuous batching (--parallel N, default 4: runtime/batch_engine.h), or over one EngineDriver
// with --parallel 1 — one generation at a time, with what only the Engine does: --save storing
// every request like a chat, speculative decoding, evicting KV policies. Ctrl-C or SIGTERM stops
// it.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include "cli/commands.h"
#include "cli/engine_driver.h"
#include "cli/engine_flags.h"
#include "cli/interrupt.h"
#include "core/error.h"
#include "runtime/batch_engine.h"
#include "server/access.h"
#include "server/batch_trace.h"
#include "server/openai_server.h"
#include "session/backend_factory.h"
#include "session/loaded_model.h"

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
        std::string model, host = "127.0.0.1", api_key, api_key_file;
        bool insecure_public = false;
        int port = 8080;
        size_t max_body = size_t(1) << 20;
        int max_queue = 16;
        int64_t max_tokens = 512;
        int64_t max_tokens_cap = -1;  // -1: half the context
        int max_connections = app::HttpLimits{}.max_connections;
        double header_timeout = 10, body_timeout = 30, request_timeout = 600;
        EngineFlags engine;
        SamplingFlags sampling;
        SpecFlags spec;
        KvPolicyFlags kv;
        DriverOptions save;  // --save, --db, --telemetry
        std::string level = "summary";
        int parallel = 4;
        int64_t prefill_chunk = 256;
        std::string batch_trace;
    };
    auto o = std::make_shared<Opts>();
    o->engine.engine.prefix_cache_slots = 8;  // agents resend system prompts and tools
    cmd->add_option("model", o->model, "GGUF model file")->required();
    cmd->add_option("--host", o->host,
                    "Address to listen on; one other than loopback needs an API key")
        ->capture_default_str();
    cmd->add_option("--port", o->port, "Port to listen on (0: any free one)")
        ->capture_default_str()
        ->check(CLI::Range(0, 65535));
    cmd->add_option("--api-key", o->api_key,
                    "Require 'Authorization: Bearer KEY' on every request (visible to ps: "
                    "prefer --api-key-file or FLUORO_API_KEY)");
    cmd->add_option("--api-key-file", o->api_key_file,
                    "Read the API key from the first line of FILE")
        ->check(CLI::ExistingFile);
    cmd->add_flag("--insecure-public", o->insecure_public,
                  "Allow a non-loopback --host without an API key");
    cmd->add_option("--max-body", o->max_body,
                    "Largest request body in bytes, after chunked decoding (larger: 413)")
        ->capture_default_str();
    cmd->add_option("--max-connections", o->max_connections,
                    "Open connections at most; when full, the one slowest to send its headers "
                    "makes room, and if none is, the new one gets 503")
        ->capture_default_str()
        ->check(CLI::Range(1, 65536));
    cmd->add_option("--header-timeout", o->header_timeout,
                    "Seconds for a request's whole header block (slower: closed)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd->add_option("--body-timeout", o->body_timeout,
                    "Seconds for a request's whole body after its headers (slower: 408)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd->add_option("--request-timeout", o->request_timeout,
                    "Seconds a completion may wait and run, 0: none (then stopped; the reply "
                    "so far with finish_reason length)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--max-queue", o->max_queue,
                    "Requests that may wait behind the running ones (more: 429)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("-n,--max-tokens", o->max_tokens,
                    "Tokens per reply at most when a request does not say")
        ->capture_default_str();
    cmd->add_option("--max-tokens-cap", o->max_tokens_cap,
                    "Tokens per reply at most whatever a request says (default: half of "
                    "--ctx; 0: no cap)")
        ->check(CLI::NonNegativeNumber);
    auto* parallel_opt =
        cmd->add_option("--parallel", o->parallel,
                        "Sequences generating at once (continuous batching); 1: one at a time "
                        "on the workbench's engine, which --save, --spec and an evicting "
                        "--kv-policy need")
            ->capture_default_str()
            ->check(CLI::Range(1, 64));
    cmd->add_option("--prefill-chunk", o->prefill_chunk,
                    "Prompt tokens one batched step computes at most, so a long prompt does not "
                    "stall the sequences decoding beside it")
        ->capture_default_str()
        ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
    cmd->add_option("--batch-trace", o->batch_trace,
                    "Write the batch scheduler's steps to FILE as a Chrome trace (Perfetto): a "
                    "row per slot, prefill chunks and decode steps, queue and KV counters");
    o->engine.add_to(*cmd);
    o->sampling.add_to(*cmd);
    o->spec.add_to(*cmd);
    o->kv.add_to(*cmd);
    add_save_flags(*cmd, o->save, o->level);
    cmd->callback([o, parallel_opt] {
        // The key: the flag, else the file, else the environment (neither shows in `ps`).
        std::string key = o->api_key;
        if (key.empty() && !o->api_key_file.empty()) key = app::read_api_key_file(o->api_key_file);
        if (const char* env = std::getenv("FLUORO_API_KEY"); key.empty() && env && *env) key = env;
        app::check_bind(o->host, !key.empty(), o->insecure_public);
        if (!key.empty() && !o->api_key.empty())
            std::cerr << "warning: --api-key is visible to every user of this machine (ps); "
                         "prefer --api-key-file or FLUORO_API_KEY\n";
        if (key.empty() && !app::is_loopback_host(o->host))
            std::cerr << "warning: serving " << o->host
                      << " without an API key (--insecure-public): anyone who reaches it can use "
                         "the engine\n";
        // One client must not hold the engine until the context fills: half of it by default
        // leaves the other half for the prompt.
        const int64_t cap = o->max_tokens_cap >= 0 ? o->max_tokens_cap
                                                   : std::max<int64_t>(1, o->engine.engine.ctx / 2);

        // What only the one-at-a-time engine does: with the default --parallel it is chosen
        // (and said); asked for beside an explicit --parallel N > 1, it is an error.
        std::string needs_engine;
        if (o->save.save)
            needs_engine = "--save";
        else if (o->spec.enabled())
            needs_engine = "--spec";
        else if (o->kv.enabled())
            needs_engine = "--kv-policy";
        int parallel = o->parallel;
        if (parallel > 1 && !needs_engine.empty()) {
            if (parallel_opt->count() > 0)
                throw Error(needs_engine + " needs --parallel 1 (continuous batching does not " +
                            "store runs, speculate or evict yet)");
            std::cerr << "serve: " << needs_engine
                      << " runs one generation at a time (--parallel 1)\n";
            parallel = 1;
        }
        if (!o->batch_trace.empty() && parallel == 1)
            throw Error("--batch-trace shows continuous batching: it needs --parallel 2 or more");

        app::ServerOptions so;
        so.model_id = std::filesystem::path(o->model).filename().string();
        so.api_key = key;
        so.max_body = o->max_body;
        so.max_queue = o->max_queue;
        so.max_tokens_cap = cap;
        const auto ms = [](double s) { return std::chrono::milliseconds(int64_t(s * 1000)); };
        so.http.max_connections = o->max_connections;
        so.http.header_timeout = ms(o->header_timeout);
        so.http.body_timeout = ms(o->body_timeout);
        so.request_timeout = ms(o->request_timeout);
        so.sampling = o->sampling.params;
        const int64_t max_tokens = cap > 0 ? std::min(o->max_tokens, cap) : o->max_tokens;

        std::unique_ptr<EngineDriver> driver;
        std::unique_ptr<app::BatchTraceWriter> trace;  // outlives the engine that writes it
        std::unique_ptr<BatchEngine> batch;
        app::CompletionBackend backend;
        if (parallel == 1) {
            DriverOptions d = o->save;
            d.model = o->model;
            d.engine = o->engine;
            d.sampling = o->sampling;
            d.spec = o->spec;
            d.kv = o->kv;
            d.max_tokens = max_tokens;
            d.print_tokens = false;
            apply_level(d, o->level);
            driver = std::make_unique<EngineDriver>(d);
            so.model_info = driver->model();
            EngineDriver& dr = *driver;
            backend.run = [&dr](Complete c, const std::function<void(const Event&)>& on_event,
                                const std::atomic<bool>&) {
                dr.set_sink(on_event);
                RunFinished f = dr.run(std::move(c));
                dr.set_sink(nullptr);
                return f;
            };
            backend.cancel = [&dr] { dr.engine().cancel(); };
        } else {
            BatchEngineOptions bo;
            bo.parallel = parallel;
            bo.prefill_chunk = o->prefill_chunk;
            bo.sampling = o->sampling.params;
            bo.max_tokens = max_tokens;
            bo.backend_factory = app::make_backend;
            batch = std::make_unique<BatchEngine>(o->model,
                                                  app::model_settings(o->engine.settings()), bo);
            so.model_info = batch->model();
            if (!o->batch_trace.empty()) {
                trace = std::make_unique<app::BatchTraceWriter>(o->batch_trace, parallel);
                app::BatchTraceWriter& tw = *trace;
                batch->set_step_observer(
                    [&tw](const BatchStep& s, const BatchLoad& l) { tw.step(s, l); });
            }
            if (!so.model_info.prefix_cache_note.empty())
                std::cerr << so.model_info.prefix_cache_note << '\n';
            backend = app::batch_backend(*batch);
        }
        app::OpenAiServer server(so, backend);
        const int port = server.start(o->host, o->port);
        std::cerr << "serving " << so.model_id << " on http://" << o->host << ':' << port << "/v1, "
                  << parallel << (parallel == 1 ? " generation" : " generations") << " at once";
        // The pool holds every slot's whole context: say what that costs.
        if (batch) std::cerr << ", KV pool " << so.model_info.kv_bytes / (1024 * 1024) << " MiB";
        std::cerr << " (Ctrl-C stops)" << std::endl;

        std::atomic<bool>& interrupted = install_interrupt_flag();
        std::signal(SIGTERM, on_sigterm);
        while (!interrupted.load() && !g_terminate.load())
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        std::cerr << "stopping" << std::endl;
        server.stop();
    });
}

}  // namespace fluoro::cli
