#include "server/openai_server.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <deque>
#include <iostream>
#include <optional>
#include <vector>

#include "chat/tool_calls.h"
#include "core/error.h"
#include "decode/stop_strings.h"
#include "server/access.h"
#include "server/chat_request.h"
#include "server/chat_response.h"
#include "server/server_metrics.h"

namespace fluoro::app {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string dump(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// What one request did, for its log line: left on its exchange (HttpExchange::note) by the
// handler, read when the reply is done.
struct RunNote {
    Clock::time_point start = Clock::now();
    bool ran = false;
    uint64_t run = 0;
    int64_t prompt = 0, cached = 0, completion = 0;
    std::string stop, cache_source;
    int status = 0;  // what the log shows when not the status sent (499: the client left)
};

void note_run(RunNote& n, const RunFinished& f, std::string cache_source) {
    n.ran = true;
    n.run = f.run;
    n.cache_source = std::move(cache_source);
    n.prompt = f.prompt_tokens;
    n.cached = f.cached_tokens;
    n.completion = f.n_tokens;
    n.stop = f.stop;
}

std::string error_body(std::string_view message, std::string_view type = "invalid_request_error",
                       std::string_view param = {}, std::string_view code = {}) {
    return dump(error_json(message, type, param, code));
}

bool send_error(HttpExchange& ex, int status, std::string_view message,
                std::string_view type = "invalid_request_error", std::string_view param = {},
                std::string_view code = {}) {
    return ex.respond(status, "application/json", error_body(message, type, param, code));
}

// A fixed set of threads for the requests admitted (those generating, the others waiting):
// admission bounds their number, so a task never waits for a thread.
class WorkerPool {
  public:
    explicit WorkerPool(int n) {
        for (int i = 0; i < n; ++i) threads_.emplace_back([this] { work(); });
    }
    ~WorkerPool() { join(); }
    void post(std::function<void()> task) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            tasks_.push_back(std::move(task));
        }
        cv_.notify_one();
    }
    // Runs what was posted, then ends the threads.
    void join() {
        {
            std::lock_guard<std::mutex> lock(mu_);
            done_ = true;
        }
        cv_.notify_all();
        for (auto& t : threads_)
            if (t.joinable()) t.join();
    }

  private:
    void work() {
        for (;;) {
            std::function<void()> task;
            {
                std::unique_lock<std::mutex> lock(mu_);
                cv_.wait(lock, [&] { return done_ || !tasks_.empty(); });
                if (tasks_.empty()) return;
                task = std::move(tasks_.front());
                tasks_.pop_front();
            }
            task();
        }
    }
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> tasks_;
    bool done_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace

CompletionBackend batch_backend(BatchEngine& engine, std::function<void(const Event&)> tap) {
    CompletionBackend b;
    b.run = [&engine, tap = std::move(tap)](Complete c,
                                            const std::function<void(const Event&)>& on_event,
                                            const std::atomic<bool>& cancel) {
        if (!tap) return engine.run(c, on_event, &cancel);
        return engine.run(
            c,
            [&](const Event& e) {
                tap(e);
                on_event(e);
            },
            &cancel);
    };
    b.parallel = int(engine.options().parallel);
    b.batch_load = [&engine] { return engine.load(); };
    return b;
}

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
    std::unique_ptr<HttpListener> listener;
    std::unique_ptr<WorkerPool> workers;
    // The backend's slots: generations running at once at most (run_slot below).
    std::mutex slot_mu;
    std::condition_variable slot_cv;
    int free_slots = 1;
    std::mutex admit_mu;
    int admitted = 0;  // completion requests running or waiting
    int waiting = 0;   // those admitted that do not hold the engine yet
    std::atomic<bool> stopping{false};
    std::atomic<int64_t> completions{0}, cancelled{0}, rejected{0}, timed_out{0};
    ServerMetrics metrics;
    bool started = false;

    // A place among the admitted requests, given back when the last copy goes; waiting until
    // the request holds the engine (engaged()), so /metrics does not count a request that is
    // writing its last bytes as waiting.
    struct Ticket {
        explicit Ticket(Impl* i) : impl(i) {}
        Ticket(const Ticket&) = delete;
        Ticket& operator=(const Ticket&) = delete;
        Impl* impl;
        bool waiting = true;
        void engaged() {
            std::lock_guard<std::mutex> lock(impl->admit_mu);
            if (waiting) --impl->waiting;
            waiting = false;
        }
        ~Ticket() {
            std::lock_guard<std::mutex> lock(impl->admit_mu);
            --impl->admitted;
            if (waiting) --impl->waiting;
        }
    };
    std::shared_ptr<Ticket> admit() {
        std::lock_guard<std::mutex> lock(admit_mu);
        if (admitted >= opt.max_queue + backend.parallel) return nullptr;  // running + max_queue
        ++admitted;
        ++waiting;
        return std::make_shared<Ticket>(this);
    }

    Impl(ServerOptions o, CompletionBackend b)
        : opt(std::move(o)), backend(std::move(b)), metrics(opt.model_id) {
        backend.parallel = std::max(1, backend.parallel);
        free_slots = backend.parallel;
    }

    // One of the backend's slots, held while a request generates (its choices one after
    // another); given back by release() or the destructor.
    class SlotHold {
      public:
        explicit SlotHold(Impl& i) : impl_(i) {}
        ~SlotHold() { release(); }
        SlotHold(const SlotHold&) = delete;
        SlotHold& operator=(const SlotHold&) = delete;
        bool try_acquire_for(std::chrono::milliseconds d) {
            std::unique_lock<std::mutex> lock(impl_.slot_mu);
            if (!impl_.slot_cv.wait_for(lock, d, [&] { return impl_.free_slots > 0; }))
                return false;
            --impl_.free_slots;
            held_ = true;
            return true;
        }
        void release() {
            if (!held_) return;
            held_ = false;
            {
                std::lock_guard<std::mutex> lock(impl_.slot_mu);
                ++impl_.free_slots;
            }
            impl_.slot_cv.notify_one();
        }

      private:
        Impl& impl_;
        bool held_ = false;
    };

    HttpListener::Hooks hooks();
    std::optional<std::pair<int, std::string>> screen(const HttpRequest& req) const;
    void handle(const std::shared_ptr<HttpExchange>& ex);
    void finished(const HttpExchange& ex, int status);
    void handle_models(HttpExchange& ex);
    void handle_metrics(HttpExchange& ex);
    void handle_completion(const std::shared_ptr<HttpExchange>& ex);
    // On a worker thread: waits for the engine, runs the request, writes the reply.
    void run_completion(const std::shared_ptr<HttpExchange>& ex, ChatRequest cr,
                        Clock::time_point deadline, Ticket& ticket);
    // Runs one generation (a slot held); `cache` receives its prompt-cache telemetry, if any.
    RunFinished run_locked(RunNote& note, Complete c,
                           const std::function<void(const Event&)>& on_event,
                           const std::atomic<bool>& cancel, std::optional<PrefixCacheEvent>& cache);
};

HttpListener::Hooks OpenAiServer::Impl::hooks() {
    HttpListener::Hooks h;
    h.screen = [this](const HttpRequest& req) { return screen(req); };
    h.handle = [this](std::shared_ptr<HttpExchange> ex) { handle(ex); };
    h.error_body = [](int status, std::string_view message) {
        return error_body(message, status >= 500 ? "server_error" : "invalid_request_error");
    };
    h.finished = [this](const HttpExchange& ex, int status) { finished(ex, status); };
    return h;
}

// Before the body is read: the key, then the route (neither needs the body, so a client without
// the key or with a wrong path never gets to send one).
std::optional<std::pair<int, std::string>> OpenAiServer::Impl::screen(
    const HttpRequest& req) const {
    if (!opt.api_key.empty() && !bearer_matches(req.header("Authorization"), opt.api_key))
        return std::pair{401, error_body("invalid or missing API key (Authorization: Bearer KEY)",
                                         "invalid_request_error", {}, "invalid_api_key")};
    const bool known = (req.method == "GET" && req.path == "/v1/models") ||
                       (req.method == "GET" && req.path == "/metrics") ||
                       (req.method == "POST" && req.path == "/v1/chat/completions") ||
                       (req.method == "POST" && req.path == "/v1/completions");
    if (!known) return std::pair{404, error_body("no such endpoint")};
    return std::nullopt;
}

void OpenAiServer::Impl::handle(const std::shared_ptr<HttpExchange>& ex) {
    ex->note = std::make_shared<RunNote>();
    if (ex->request().path == "/v1/models") return handle_models(*ex);
    if (ex->request().path == "/metrics") return handle_metrics(*ex);
    handle_completion(ex);
}

void OpenAiServer::Impl::finished(const HttpExchange& ex, int status) {
    const auto* note = static_cast<const RunNote*>(ex.note.get());
    if (note && note->status) status = note->status;
    if (status >= 400) rejected.fetch_add(1);
    const HttpRequest& req = ex.request();
    RequestRecord r;
    r.method = req.method;
    r.path = req.path;
    r.remote = req.remote;
    r.status = status;
    r.ms =
        std::chrono::duration<double, std::milli>(Clock::now() - (note ? note->start : req.start))
            .count();
    if (note) {
        r.ran = note->ran;
        r.run = note->run;
        r.prompt = note->prompt;
        r.cached = note->cached;
        r.completion = note->completion;
        r.stop = note->stop;
        r.cache_source = note->cache_source;
    }
    if (opt.on_request) opt.on_request(r);
    if (opt.log) std::cerr << "serve: " + format_request(r) + '\n' << std::flush;
}

void OpenAiServer::Impl::handle_models(HttpExchange& ex) {
    json model{
        {"id", opt.model_id}, {"object", "model"}, {"created", 0}, {"owned_by", "fluoroscope"}};
    if (const ModelLoaded& m = opt.model_info; !m.path.empty()) {
        model["root"] = opt.model_id;
        model["max_model_len"] = m.ctx;  // vLLM's name for the served context
        model["meta"] = {{"name", m.name},
                         {"arch", m.arch},
                         {"backend", m.backend},
                         {"kv_type", m.kv_type},
                         {"threads", m.threads},
                         {"n_ctx", m.ctx},
                         {"weights_bytes", m.weights_bytes},
                         {"chat_template", m.chat_template}};
    }
    ex.respond(200, "application/json",
               dump(json{{"object", "list"}, {"data", json::array({model})}}));
}

void OpenAiServer::Impl::handle_metrics(HttpExchange& ex) {
    ServerMetrics::Snapshot s;
    {
        std::lock_guard<std::mutex> lock(admit_mu);
        s.waiting = waiting;
    }
    s.cancelled = cancelled.load();
    s.rejected = rejected.load();
    s.timed_out = timed_out.load();
    if (backend.batch_load) s.batch = backend.batch_load();
    if (listener) s.http = listener->counters();
    ex.respond(200, "text/plain; version=0.0.4; charset=utf-8", metrics.exposition(s));
}

RunFinished OpenAiServer::Impl::run_locked(RunNote& note, Complete c,
                                           const std::function<void(const Event&)>& on_event,
                                           const std::atomic<bool>& cancel,
                                           std::optional<PrefixCacheEvent>& cache) {
    completions.fetch_add(1);
    ServerMetrics::RunClock clock = metrics.run_started(note.start);
    RunFinished f = backend.run(
        std::move(c),
        [&](const Event& e) {
            if (const auto* pc = std::get_if<PrefixCacheEvent>(&e)) cache = *pc;
            metrics.event(e, clock);
            on_event(e);
        },
        cancel);
    metrics.run_finished(f, clock);
    note_run(note, f, cache ? cache->source : std::string("-"));
    return f;
}

void OpenAiServer::Impl::handle_completion(const std::shared_ptr<HttpExchange>& ex) {
    ChatRequest cr;
    try {
        cr = ex->request().path == "/v1/completions"
                 ? parse_completion_request(ex->request().body, opt.sampling)
                 : parse_chat_request(ex->request().body, opt.sampling);
    } catch (const RequestError& e) {
        send_error(*ex, 400, e.what(), "invalid_request_error", e.param());
        return;
    }
    // One client must not hold the engine for as long as it likes: asking for more than the
    // cap gets the cap, and finish_reason "length" says where it stopped.
    if (opt.max_tokens_cap > 0 && cr.complete.max_tokens &&
        *cr.complete.max_tokens > opt.max_tokens_cap)
        cr.complete.max_tokens = opt.max_tokens_cap;
    auto ticket = admit();
    if (!ticket) {
        send_error(*ex, 429, "too many requests are waiting; try again later", "rate_limit_error",
                   {}, "queue_full");
        return;
    }
    const auto deadline = opt.request_timeout.count() > 0 ? Clock::now() + opt.request_timeout
                                                          : Clock::time_point::max();
    auto shared_cr = std::make_shared<ChatRequest>(std::move(cr));
    workers->post([this, ex, ticket, shared_cr, deadline] {
        run_completion(ex, std::move(*shared_cr), deadline, *ticket);
    });
}

void OpenAiServer::Impl::run_completion(const std::shared_ptr<HttpExchange>& ex, ChatRequest cr,
                                        Clock::time_point deadline, Ticket& ticket) {
    using namespace std::chrono_literals;
    auto& note = *static_cast<RunNote*>(ex->note.get());
    // Wait for a slot in slices, so that a client that leaves, the request timeout and a
    // stopping server end the wait.
    SlotHold lock(*this);
    while (!lock.try_acquire_for(100ms)) {
        if (ex->gone()) {
            cancelled.fetch_add(1);
            send_error(*ex, 499, "the client closed the connection", "server_error");
            return;
        }
        if (stopping.load()) break;
        if (Clock::now() >= deadline) {
            timed_out.fetch_add(1);
            send_error(*ex, 503, "the request timed out waiting for the engine", "server_error", {},
                       "timeout");
            return;
        }
    }
    if (stopping.load()) {
        send_error(*ex, 503, "the server is stopping", "server_error");
        return;
    }
    ticket.engaged();

    const auto ids = new_completion_ids(cr.model.empty() ? opt.model_id : cr.model);
    const bool stream = cr.stream;
    const bool tools = !cr.complete.extras.tools_json.empty();
    bool gone = false, timeout = false;
    // Streamed: the head and the role chunk go out with the first token (so that an error
    // before it, such as a prompt over the context, still gets its status). Not streamed: a
    // client that closed its sending side is answered through a chunked reply started early,
    // whose writes tell a half-closed client (it reads them) from a gone one (a reset).
    bool head_sent = false;
    Clock::time_point last_probe{};
    // /v1/completions answers in text_completion objects, built from the chat ones.
    const auto shape = [&](json j) { return cr.legacy ? to_text_completion(std::move(j)) : j; };
    std::atomic<bool> cancel{false};  // this request's generation stops
    const auto stop_run = [&] {
        cancel = true;
        if (backend.parallel == 1 && backend.cancel) backend.cancel();
    };
    const auto fail = [&] {
        gone = true;
        stop_run();
    };
    int index = 0;      // the choice being generated (n > 1: one after another)
    bool first = true;  // its next chunk is its first (carries the role)
    const auto indexed = [&](json j) {
        j["choices"][0]["index"] = index;
        return j;
    };
    const auto open_stream = [&] {
        if (head_sent) return;
        head_sent = true;
        if (!ex->begin_chunked(200, "text/event-stream", {{"Cache-Control", "no-cache"}}))
            return fail();
        if (!ex->write_chunk(sse_event(shape(indexed(chunk_json(ids, "", true)))))) return fail();
        first = false;
    };
    const auto send = [&](const json& j) {
        if (gone) return;
        open_stream();
        if (!gone && !ex->write_chunk(sse_event(shape(indexed(j))))) fail();
    };
    std::optional<PrefixCacheEvent> cache;  // the first choice's (the prompt is computed once)
    std::vector<json> replies;              // not streamed: each choice's completion object
    std::optional<RunFinished> first_run;
    int64_t completion_tokens = 0;  // over all choices
    for (; index < cr.n; ++index) {
        // With tools, the reply is read in the syntax the model's template teaches (RunStarted
        // says which); streamed content stops where a call begins, and a tail that may begin the
        // call's marker is held back like one that may begin a stop string.
        ToolCallSyntax syntax = ToolCallSyntax::None;
        std::vector<std::string> stop_strings = cr.complete.stop_strings;
        bool calling = false;  // a tool call began: nothing more is streamed as content
        first = true;
        std::string text;  // streamed: text that may begin a stop string is held back
        size_t sent = 0;
        // logprobs: every token's entry (not streamed), or those not yet sent with a chunk.
        json logprobs = json::array();
        const auto take_logprobs = [&]() -> std::optional<json> {
            if (!cr.logprobs) return std::nullopt;
            json out = std::move(logprobs);
            logprobs = json::array();
            return out;
        };
        const auto chunk = [&](std::string_view content, bool is_first,
                               std::string_view finish = {}) {
            const std::optional<json> lp = take_logprobs();
            return chunk_json(ids, content, is_first, finish, lp ? &*lp : nullptr);
        };
        Complete c = cr.complete;
        if (c.sampling) c.sampling->seed += uint64_t(index);
        std::optional<PrefixCacheEvent> run_cache;
        RunFinished f = run_locked(
            note, std::move(c),
            [&](const Event& e) {
                if (!gone && ex->gone()) fail();
                if (!timeout && Clock::now() >= deadline) {
                    timeout = true;
                    stop_run();
                }
                if (stopping.load()) stop_run();
                if (gone) return;
                if (const auto* rs = std::get_if<RunStarted>(&e); rs && tools) {
                    syntax = rs->tool_call_syntax;
                    if (const std::string_view m = tool_call_marker(syntax); !m.empty())
                        stop_strings.emplace_back(m);
                }
                if (const auto* t = std::get_if<TokenEvent>(&e); t && t->id >= 0 && cr.logprobs)
                    logprobs.push_back(logprob_entry(*t, cr.top_logprobs));
                if (!stream) {
                    if (!ex->peer_eof()) return;
                    // A probe every 20 ms at most: a gone client's reset is back within a round
                    // trip, and a half-closed one reads a few spaces.
                    const auto now = Clock::now();
                    if (now - last_probe < 20ms) return;
                    last_probe = now;
                    if (!head_sent) {
                        head_sent = true;
                        if (!ex->begin_chunked(200, "application/json")) fail();
                    } else if (!ex->write_chunk(" ")) {
                        fail();  // JSON allows leading white space; a gone client resets
                    }
                    return;
                }
                if (const auto* t = std::get_if<TokenEvent>(&e)) {
                    // The reasoning goes out at once as reasoning_content; the answer (or the
                    // text as generated, when no split is known) through the stop-string
                    // hold-back.
                    if (t->split && !t->reasoning_text.empty()) {
                        open_stream();
                        json j = chunk("", first);
                        j["choices"][0]["delta"].erase("content");
                        j["choices"][0]["delta"]["reasoning_content"] = t->reasoning_text;
                        send(j);
                        first = false;
                    }
                    text += t->split ? t->answer_text : t->piece;
                    if (calling) return;
                    size_t limit = text.size();
                    if (syntax != ToolCallSyntax::None) {
                        if (const size_t at = tool_call_start(syntax, text);
                            at != std::string::npos) {
                            calling = true;
                            limit = std::max(at, sent);
                        }
                    }
                    // Released text holds no start of a stop string, so a match can only begin
                    // at `sent`: scan the held-back tail only.
                    const size_t safe = std::min(
                        limit,
                        sent + releasable(std::string_view(text).substr(sent), stop_strings));
                    if (safe <= sent) return;
                    open_stream();
                    send(chunk(text.substr(sent, safe - sent), first));
                    sent = safe;
                    first = false;
                }
            },
            cancel, run_cache);
        if (index == 0) cache = run_cache;
        if (gone) break;
        if (timeout) {
            timed_out.fetch_add(1);
            if (f.stop == "cancelled") f.stop = "timeout";
            note.stop = f.stop;
        }
        if (f.stop == "error") {
            lock.release();
            const ContextOverflow over = context_overflow(f);
            const json err =
                over ? context_overflow_json(over) : error_json(f.error, "server_error");
            if (!head_sent) {
                ex->respond(over ? 400 : 500, "application/json", dump(err));
            } else if (stream) {
                if (!gone) ex->write_chunk(sse_event(err));
                ex->write_chunk("data: [DONE]\n\n");
                ex->end_chunked();
            } else {
                ex->write_chunk(dump(err));
                ex->end_chunked();
            }
            return;
        }
        completion_tokens += f.n_tokens;
        if (!first_run) first_run = f;
        const ReplyParts parts = reply_parts(f, syntax);
        if (!stream) {
            const std::optional<json> lp = take_logprobs();
            replies.push_back(
                completion_json(ids, f, cache ? &*cache : nullptr, lp ? &*lp : nullptr, &parts));
        } else {
            std::string finish = finish_reason(f);
            if (!parts.tool_calls.empty()) {
                // The content before the first call, as far as it was held back; then the
                // calls.
                if (parts.content.size() > sent && !calling) {
                    send(chunk(parts.content.substr(sent), first));
                    first = false;
                }
                json j = chunk("", first);
                j["choices"][0]["delta"].erase("content");
                j["choices"][0]["delta"]["tool_calls"] = tool_calls_json(parts.tool_calls, true);
                send(j);
                first = false;
                finish = "tool_calls";
            } else if (parts.content.size() > sent) {
                // What was held back and is part of the reply after all (the engine's text is
                // cut before a stop string).
                send(chunk(parts.content.substr(sent), first));
                first = false;
            }
            send(chunk("", first, finish));
        }
        if (timeout) break;  // the time is up for the choices still to come too
    }
    lock.release();

    if (gone) {
        cancelled.fetch_add(1);
        // Nobody reads it; 499 (nginx's "client closed request") marks it in the log.
        note.status = 499;
        if (head_sent) {
            ex->end_chunked();
        } else {
            send_error(*ex, 499, "the client closed the connection", "server_error");
        }
        return;
    }
    if (!stream) {
        // Choice i of reply i; the prompt counted once, every choice's tokens.
        json body = std::move(replies.front());
        for (size_t i = 1; i < replies.size(); ++i) {
            json choice = std::move(replies[i]["choices"][0]);
            choice["index"] = int(i);
            body["choices"].push_back(std::move(choice));
        }
        add_completion_tokens(body["usage"], completion_tokens - first_run->n_tokens);
        const std::string text = dump(shape(std::move(body)));
        if (head_sent) {
            ex->write_chunk(text);
            ex->end_chunked();
        } else {
            ex->respond(200, "application/json", text);
        }
        return;
    }
    if (cr.include_usage) {
        json u = usage_chunk_json(ids, *first_run, cache ? &*cache : nullptr);
        add_completion_tokens(u["usage"], completion_tokens - first_run->n_tokens);
        if (!gone && !ex->write_chunk(sse_event(shape(std::move(u))))) fail();
    }
    if (!gone) ex->write_chunk("data: [DONE]\n\n");
    if (gone) {
        cancelled.fetch_add(1);
        note.status = 499;
    }
    ex->end_chunked();
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
    HttpLimits limits = impl_->opt.http;
    limits.max_body = impl_->opt.max_body;
    impl_->listener = std::make_unique<HttpListener>(limits, impl_->hooks());
    impl_->workers =
        std::make_unique<WorkerPool>(std::max(1, impl_->opt.max_queue + impl_->backend.parallel));
    int bound = 0;
    try {
        bound = impl_->listener->start(host, port);
    } catch (...) {
        impl_->workers.reset();
        impl_->listener.reset();
        throw;
    }
    impl_->stopping.store(false);
    impl_->started = true;
    return bound;
}

void OpenAiServer::stop() {
    if (!impl_->started) return;
    impl_->started = false;
    impl_->stopping.store(true);
    if (impl_->backend.cancel) impl_->backend.cancel();
    // Connections first (their exchanges turn gone, writers wake), then the requests' threads,
    // then the event thread they wrote through.
    impl_->listener->close_all();
    impl_->workers->join();
    impl_->listener->join();
}

ServerCounters OpenAiServer::counters() const {
    ServerCounters c{impl_->completions.load(),
                     impl_->cancelled.load(),
                     impl_->rejected.load(),
                     impl_->timed_out.load(),
                     {}};
    if (impl_->listener) c.http = impl_->listener->counters();
    return c;
}

}  // namespace fluoro::app
