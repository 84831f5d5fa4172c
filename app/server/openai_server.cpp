#include "server/openai_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <optional>

#include "core/error.h"
#include "decode/stop_strings.h"
#include "server/chat_request.h"
#include "server/chat_response.h"
#include "server/peer_socket.h"

namespace fluoro::app {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string dump(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// What one request did, for its log line. Every request is handled on one worker thread from
// routing to logging (streamed bodies included), so a thread_local carries it.
struct RequestLog {
    Clock::time_point start = Clock::now();
    bool ran = false;
    int64_t prompt = 0, cached = 0, completion = 0;
    std::string stop, cache_source;
};
thread_local RequestLog t_log;

void note_run(const RunFinished& f, std::string cache_source) {
    t_log.ran = true;
    t_log.cache_source = std::move(cache_source);
    t_log.prompt = f.prompt_tokens;
    t_log.cached = f.cached_tokens;
    t_log.completion = f.n_tokens;
    t_log.stop = f.stop;
}

void set_error(httplib::Response& res, int status, std::string_view message,
               std::string_view type = "invalid_request_error", std::string_view param = {},
               std::string_view code = {}) {
    res.status = status;
    res.set_content(dump(error_json(message, type, param, code)), "application/json");
}

}  // namespace

std::string format_request(const RequestRecord& r) {
    char buf[256];
    if (r.ran)
        std::snprintf(
            buf, sizeof buf, " %d prompt=%lld cached=%lld (%s) completion=%lld stop=%s %.1f ms",
            r.status, static_cast<long long>(r.prompt), static_cast<long long>(r.cached),
            r.cache_source.c_str(), static_cast<long long>(r.completion), r.stop.c_str(), r.ms);
    else
        std::snprintf(buf, sizeof buf, " %d %.1f ms", r.status, r.ms);
    return r.method + ' ' + r.path + buf;
}

struct OpenAiServer::Impl {
    ServerOptions opt;
    CompletionBackend backend;
    httplib::Server svr;
    std::thread thread;
    std::mutex run_mu;  // one generation at a time
    std::mutex admit_mu;
    int admitted = 0;  // completion requests running or waiting
    std::atomic<bool> stopping{false};
    std::atomic<int64_t> completions{0}, cancelled{0}, rejected{0};
    bool started = false;

    // A place among the admitted requests, given back when the last copy goes.
    struct Ticket {
        explicit Ticket(Impl* i) : impl(i) {}
        Ticket(const Ticket&) = delete;
        Ticket& operator=(const Ticket&) = delete;
        Impl* impl;
        ~Ticket() {
            std::lock_guard<std::mutex> lock(impl->admit_mu);
            --impl->admitted;
        }
    };
    std::shared_ptr<Ticket> admit() {
        std::lock_guard<std::mutex> lock(admit_mu);
        if (admitted > opt.max_queue) return nullptr;  // one running + max_queue waiting
        ++admitted;
        return std::make_shared<Ticket>(this);
    }

    Impl(ServerOptions o, CompletionBackend b) : opt(std::move(o)), backend(std::move(b)) {}

    void install_routes();
    void handle_models(httplib::Response& res);
    void handle_completion(const httplib::Request& req, httplib::Response& res);
    // Runs one generation (run_mu held); `cache` receives its prompt-cache telemetry, if any.
    RunFinished run_locked(Complete c, const std::function<void(const Event&)>& on_event,
                           std::optional<PrefixCacheEvent>& cache);
};

void OpenAiServer::Impl::install_routes() {
    const int workers = std::max(4, opt.max_queue + 3);
    svr.new_task_queue = [workers] { return new httplib::ThreadPool(size_t(workers)); };
    svr.set_payload_max_length(opt.max_body);
    // httplib's default sets SO_REUSEPORT, with which a second server (another `fluoro serve`,
    // the workbench) binds the same port without an error and the kernel splits the clients
    // between the two. SO_REUSEADDR alone still allows a restart while old connections linger.
    svr.set_socket_options([](socket_t sock) {
        int yes = 1;
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    svr.set_keep_alive_timeout(2);
    svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        t_log = RequestLog{};
        if (opt.api_key.empty()) return httplib::Server::HandlerResponse::Unhandled;
        std::string expected = "Bearer ";
        expected += opt.api_key;
        if (req.get_header_value("Authorization") == expected)
            return httplib::Server::HandlerResponse::Unhandled;
        set_error(res, 401, "invalid or missing API key (Authorization: Bearer KEY)",
                  "invalid_request_error", {}, "invalid_api_key");
        return httplib::Server::HandlerResponse::Handled;
    });
    // Errors httplib answers itself (404, 413, ...) get an OpenAI error body too.
    svr.set_error_handler(
        httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
            if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
            std::string msg;
            const char* type = "invalid_request_error";
            if (res.status == 404) {
                msg = "no such endpoint";
            } else if (res.status == 413) {
                msg = "the request body is too large";
            } else {
                msg = "the request failed (HTTP ";
                msg += std::to_string(res.status);
                msg += ')';
                if (res.status >= 500) type = "server_error";
            }
            set_error(res, res.status, msg, type);
            return httplib::Server::HandlerResponse::Handled;
        }));
    svr.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
        if (res.status >= 400) rejected.fetch_add(1);
        RequestRecord r;
        r.method = req.method;
        r.path = req.path;
        r.remote = req.remote_addr;
        r.status = res.status;
        r.ms = std::chrono::duration<double, std::milli>(Clock::now() - t_log.start).count();
        r.ran = t_log.ran;
        r.prompt = t_log.prompt;
        r.cached = t_log.cached;
        r.completion = t_log.completion;
        r.stop = t_log.stop;
        r.cache_source = t_log.cache_source;
        t_log = RequestLog{};
        if (opt.on_request) opt.on_request(r);
        if (opt.log) std::cerr << "serve: " + format_request(r) + '\n' << std::flush;
    });
    svr.Get("/v1/models",
            [this](const httplib::Request&, httplib::Response& res) { handle_models(res); });
    svr.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
        handle_completion(req, res);
    });
}

void OpenAiServer::Impl::handle_models(httplib::Response& res) {
    const json model{
        {"id", opt.model_id}, {"object", "model"}, {"created", 0}, {"owned_by", "fluoroscope"}};
    res.set_content(dump(json{{"object", "list"}, {"data", json::array({model})}}),
                    "application/json");
}

RunFinished OpenAiServer::Impl::run_locked(Complete c,
                                           const std::function<void(const Event&)>& on_event,
                                           std::optional<PrefixCacheEvent>& cache) {
    completions.fetch_add(1);
    RunFinished f = backend.run(std::move(c), [&](const Event& e) {
        if (const auto* pc = std::get_if<PrefixCacheEvent>(&e)) cache = *pc;
        on_event(e);
    });
    note_run(f, cache ? cache->source : std::string("-"));
    return f;
}

void OpenAiServer::Impl::handle_completion(const httplib::Request& req, httplib::Response& res) {
    ChatRequest cr;
    try {
        cr = parse_chat_request(req.body, opt.sampling);
    } catch (const RequestError& e) {
        return set_error(res, 400, e.what(), "invalid_request_error", e.param());
    }
    auto ticket = admit();
    if (!ticket)
        return set_error(res, 429, "too many requests are waiting; try again later",
                         "rate_limit_error", {}, "queue_full");
    auto ids = std::make_shared<CompletionIds>(
        new_completion_ids(cr.model.empty() ? opt.model_id : cr.model));

    if (!cr.stream) {
        std::unique_lock<std::mutex> lock(run_mu);
        if (stopping.load()) return set_error(res, 503, "the server is stopping", "server_error");
        // Nothing is written until the end, so the client's socket is watched instead: a client
        // that hung up (timed out, Ctrl-C) cancels its generation.
        const int fd = find_connection_socket(req.remote_addr, req.remote_port, req.local_port);
        bool gone = false;
        std::optional<PrefixCacheEvent> cache;
        const RunFinished f = run_locked(
            std::move(cr.complete),
            [&](const Event&) {
                if (!gone && fd >= 0 && peer_closed(fd)) {
                    gone = true;
                    backend.cancel();
                }
            },
            cache);
        lock.unlock();
        if (gone) {
            cancelled.fetch_add(1);
            // Nobody reads it; 499 (nginx's "client closed request") marks it in the log.
            return set_error(res, 499, "the client closed the connection", "server_error");
        }
        if (f.stop == "error") return set_error(res, 500, f.error, "server_error");
        res.set_content(dump(completion_json(*ids, f, cache ? &*cache : nullptr)),
                        "application/json");
        return;
    }

    const bool include_usage = cr.include_usage;
    auto complete = std::make_shared<Complete>(std::move(cr.complete));
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, ticket, ids, complete, include_usage](size_t, httplib::DataSink& sink) {
            std::unique_lock<std::mutex> lock(run_mu);
            bool gone = false;
            const auto send = [&](const json& j) {
                if (gone) return;
                const std::string ev = sse_event(j);
                if (!sink.write(ev.data(), ev.size())) {
                    // The client went away: stop generating for nobody.
                    gone = true;
                    backend.cancel();
                }
            };
            if (stopping.load()) {
                send(error_json("the server is stopping", "server_error"));
            } else {
                bool first = true;
                std::optional<PrefixCacheEvent> cache;
                // Text that may begin a stop string is held back until the next token tells.
                std::string text;
                size_t sent = 0;
                const RunFinished f = run_locked(
                    *complete,
                    [&](const Event& e) {
                        if (std::holds_alternative<RunStarted>(e)) {
                            send(chunk_json(*ids, "", true));
                            first = false;
                        } else if (const auto* t = std::get_if<TokenEvent>(&e)) {
                            text += t->piece;
                            // Released text holds no start of a stop string, so a match
                            // can only begin at `sent`: scan the held-back tail only.
                            const size_t safe =
                                sent + releasable(std::string_view(text).substr(sent),
                                                  complete->stop_strings);
                            if (safe <= sent) return;
                            send(chunk_json(*ids, text.substr(sent, safe - sent), first));
                            sent = safe;
                            first = false;
                        }
                    },
                    cache);
                if (gone) {
                    cancelled.fetch_add(1);
                } else if (f.stop == "error") {
                    send(error_json(f.error, "server_error"));
                } else {
                    // What was held back and is part of the reply after all (the engine's text
                    // is cut before a stop string).
                    if (f.text.size() > sent) {
                        send(chunk_json(*ids, f.text.substr(sent), first));
                        first = false;
                    }
                    send(chunk_json(*ids, "", first, finish_reason(f)));
                    if (include_usage) send(usage_chunk_json(*ids, f, cache ? &*cache : nullptr));
                }
            }
            lock.unlock();
            if (gone) return false;
            static const std::string done = "data: [DONE]\n\n";
            if (!sink.write(done.data(), done.size())) return false;
            sink.done();
            return true;
        });
}

OpenAiServer::OpenAiServer(ServerOptions opt, CompletionBackend backend)
    : impl_(std::make_unique<Impl>(std::move(opt), std::move(backend))) {}

OpenAiServer::~OpenAiServer() {
    stop();
}

int OpenAiServer::start(const std::string& host, int port) {
    if (impl_->started) throw Error("the server is already started");
    // A client that disconnects must not kill the process when we write to it.
    std::signal(SIGPIPE, SIG_IGN);
    impl_->install_routes();
    int bound = port;
    if (port == 0) {
        bound = impl_->svr.bind_to_any_port(host);
    } else if (!impl_->svr.bind_to_port(host, port)) {
        bound = -1;
    }
    if (bound <= 0) {
        std::string msg = "cannot listen on ";
        msg += host;
        msg += ':';
        msg += std::to_string(port);
        throw Error(msg);
    }
    impl_->started = true;
    impl_->thread = std::thread([this] { impl_->svr.listen_after_bind(); });
    return bound;
}

void OpenAiServer::stop() {
    if (!impl_->started) return;
    impl_->started = false;
    impl_->stopping.store(true);
    if (impl_->backend.cancel) impl_->backend.cancel();
    impl_->svr.stop();
    if (impl_->thread.joinable()) impl_->thread.join();
}

ServerCounters OpenAiServer::counters() const {
    return {impl_->completions.load(), impl_->cancelled.load(), impl_->rejected.load()};
}

}  // namespace fluoro::app
