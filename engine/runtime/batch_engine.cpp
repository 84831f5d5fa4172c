#include "runtime/batch_engine.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "backend/backend.h"
#include "backend/cpu/cpu_only_factory.h"
#include "core/error.h"
#include "core/run_errors.h"
#include "decode/chat_tokenize.h"
#include "decode/json_constraint.h"
#include "kv/paged_kv.h"
#include "kv/prefix_cache.h"
#include "model/model.h"
#include "runtime/model_events.h"
#include "runtime/prefix_cache_persistence.h"
#include "runtime/prefix_event.h"
#include "runtime/run_telemetry.h"
#include "telemetry/profiling_backend.h"

namespace fluoro {
namespace {

using Clock = std::chrono::steady_clock;
}  // namespace

// A run() waiting or running: lives on its caller's stack until its RunFinished is delivered.
struct Request {
    const Complete* c = nullptr;
    const std::atomic<bool>* cancel = nullptr;
    std::mutex mu;
    std::condition_variable cv;
    std::vector<Event> mail;  // events for the caller, in order
    bool admitted = false;    // taken off the queue (guarded by the engine's mutex)
};

// A request in a slot, owned by the engine's thread.
struct Active {
    Request* req = nullptr;
    int64_t slot = -1;
    PrefillStats prefill;  // the job's, as the telemetry reads it (the decoder's copy goes first)
    std::optional<JsonConstraint> json;
    std::vector<Event> out;  // published, not yet handed to the caller
    std::optional<RunTelemetry> tel;
};

struct BatchEngine::Impl {
    BatchEngineOptions opt;
    ModelSettings settings;
    std::string model_path;
    std::atomic<TelemetryLevel> level{TelemetryLevel::Summary};
    Clock::time_point started = Clock::now();

    // Model side, in destruction order (last first).
    std::unique_ptr<Backend> backend;
    std::unique_ptr<ProfilingBackend> profiling;
    std::unique_ptr<Model> model;
    std::unique_ptr<KvCache> kv;
    std::unique_ptr<PrefixCache> prefix;
    std::unique_ptr<PrefixCachePersistence> cache_file;
    std::unique_ptr<BatchDecoder> decoder;
    std::shared_ptr<const ConstraintVocab> constraint_vocab;
    ModelLoaded info;

    mutable std::mutex mu;
    std::condition_variable wake;
    std::deque<Request*> waiting;  // guarded by mu
    bool stopping = false;         // guarded by mu
    std::atomic<int64_t> running{0}, steps{0}, step_tokens{0};
    std::function<void(const BatchStep&, const BatchLoad&)> observer;

    // Engine thread only.
    std::map<uint64_t, std::unique_ptr<Active>> active;  // by run id (the decoder's tag)
    uint64_t last_run = 0;
    BatchStep last_step;
    std::thread thread;

    void load();
    void loop();
    void admit(Request& r);
    void finish(uint64_t run, const BatchEnded* ended, const std::string& error,
                const ContextOverflowError* overflow = nullptr);
    void deliver(Active& a);
    RunProbes probes(Active& a, uint64_t run);
    BatchLoad current_load() const;
    void save_cache(bool force);
    int64_t kv_used_bytes() const;
};

void BatchEngine::Impl::load() {
    const ModelSettings& ms = settings;
    if (opt.parallel < 1) throw Error("--parallel must be at least 1");
    if (opt.prefill_chunk < 1) throw Error("--prefill-chunk must be at least 1 token");
    if (ms.ctx < 1) throw Error("the context size must be at least 1 token");
    if (ms.batch < opt.parallel)
        throw Error("the batch (" + std::to_string(ms.batch) +
                    " tokens) must hold one token of each of the " + std::to_string(opt.parallel) +
                    " parallel sequences");
    backend = opt.backend_factory ? opt.backend_factory(ms.backend, ms.threads)
                                  : make_cpu_only_backend(ms.backend, ms.threads);
    backend->set_attention_impl(ms.attention);
    profiling = std::make_unique<ProfilingBackend>(*backend);
    ModelLoadOptions lo;
    lo.max_batch = ms.batch;
    lo.max_logit_rows = opt.parallel;
    lo.mla = ms.mla;
    model = Model::load(model_path, *profiling, lo);
    const int64_t ctx = std::min<int64_t>(ms.ctx, int64_t(model->hparams().n_ctx_train));
    KvShape ks;
    ks.n_ctx = ctx;
    ks.type = ms.kv_type;
    ks.n_seq = opt.parallel + ms.prefix_cache_slots;
    // Every live sequence may reach the whole context at once (no preemption is needed), and
    // the prefix cache has one context more of its own; a block per sequence for rounding.
    ks.pool_tokens = (opt.parallel + (ms.prefix_cache_slots > 0 ? 1 : 0)) * ctx +
                     (opt.parallel + 1) * ks.block_tokens;
    ks.step_tokens = ms.batch;
    kv = model->create_kv(ks);
    if (!ms.prefix_cache_file.empty() && ms.prefix_cache_slots <= 0)
        throw Error("a prefix cache file needs prefix cache slots (there are none)");
    if (auto* paged = dynamic_cast<PagedKvCache*>(kv.get());
        paged != nullptr && ms.prefix_cache_slots > 0)
        prefix = std::make_unique<PrefixCache>(*paged, opt.parallel, ms.prefix_cache_slots);
    PrefixCachePersistence::Restored restored;
    if (prefix && !ms.prefix_cache_file.empty()) {
        cache_file = std::make_unique<PrefixCachePersistence>(
            ms.prefix_cache_file, prefix_cache_key(*model, model_path, ms.kv_type, backend->name()),
            std::chrono::milliseconds(ms.prefix_cache_save_interval_ms));
        restored = cache_file->restore(*prefix, 0);
    }
    decoder = std::make_unique<BatchDecoder>(
        *model, *kv, prefix.get(), BatchDecoder::Options{opt.parallel, opt.prefill_chunk});
    info =
        describe_loaded(*model, model_path, *backend, *profiling, ms.kv_type, ctx, *kv, restored);
}

int64_t BatchEngine::Impl::kv_used_bytes() const {
    if (const auto* paged = dynamic_cast<const PagedKvCache*>(kv.get())) {
        const BlockPool& pool = paged->pool();
        return pool.size() > 0 ? int64_t(double(kv->bytes_allocated()) *
                                         double(pool.used_blocks()) / double(pool.size()))
                               : 0;
    }
    int64_t used = 0;
    for (int64_t s = 0; s < opt.parallel; ++s) used += int64_t(kv->bytes_used(s));
    return used;
}

BatchLoad BatchEngine::Impl::current_load() const {
    BatchLoad l;
    {
        std::lock_guard<std::mutex> lock(mu);
        l.waiting = int64_t(waiting.size());
    }
    l.n_slots = opt.parallel;
    l.running = running.load();
    l.steps = steps.load();
    l.step_tokens = step_tokens.load();
    l.kv_bytes = int64_t(kv->bytes_allocated());
    l.kv_used_bytes = kv_used_bytes();
    return l;
}

RunProbes BatchEngine::Impl::probes(Active& a, uint64_t run) {
    RunProbes p;
    p.cached_tokens = [&a] { return a.prefill.reused_tokens; };
    p.prefix = [this, &a, run](int64_t prompt_tokens, int64_t t_ns) {
        const std::vector<int32_t>& prompt = a.tel->started().prompt_ids;
        return make_prefix_event(a.prefill, run, prompt_tokens, prompt, t_ns, model->tokenizer(),
                                 prefix.get(), int64_t(kv->shape().bytes_per_token()));
    };
    p.memory = [this, run](int64_t t_ns) {
        return MemoryCounters{run,
                              profiling->weights_bytes(),
                              int64_t(kv->bytes_allocated()),
                              kv_used_bytes(),
                              profiling->scratch_bytes(),
                              t_ns,
                              0,
                              int64_t(kv->bytes_allocated())};
    };
    set_text_probes(p, *model);
    return p;
}

void BatchEngine::Impl::deliver(Active& a) {
    if (a.out.empty()) return;
    Request& r = *a.req;
    {
        std::lock_guard<std::mutex> lock(r.mu);
        for (Event& e : a.out) r.mail.push_back(std::move(e));
        r.cv.notify_all();  // under the lock: see finish()
    }
    a.out.clear();
}

void BatchEngine::Impl::admit(Request& r) {
    const Complete& c = *r.c;
    try {
        check_complete(c);
    } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(r.mu);
        r.mail.emplace_back(finished_without_run("error", e.what()));
        r.cv.notify_all();
        return;
    }
    const uint64_t run = ++last_run;
    auto a = std::make_unique<Active>();
    Active& act = *a;
    act.req = &r;
    // Each request is a conversation of its own, numbered like its run, started with the turns
    // before its last message (the system prompt apart), as the Engine starts one for a Complete:
    // whoever stores the runs keeps their history.
    const size_t first = c.messages.front().role == "system" ? 1 : 0;
    RunStarted rs;
    rs.run = run;
    rs.conversation = run;
    rs.kind = RunKind::Send;
    rs.kept_messages = int64_t(c.messages.size() - first) - 1;
    rs.user_text = c.messages.back().content;
    if (first == 1) rs.system_prompt = c.messages.front().content;
    act.out.push_back(ConversationStarted{
        run,
        rs.system_prompt,
        std::vector<ChatMessage>(c.messages.begin() + std::ptrdiff_t(first), c.messages.end() - 1),
        0,
        {}});
    rs.sampling = c.sampling.value_or(opt.sampling);
    rs.max_tokens = c.max_tokens.value_or(opt.max_tokens);
    rs.raw = c.raw;
    describe_model(rs, *model, model_path, *backend, settings.kv_type, info.ctx);
    act.tel.emplace(std::move(rs), level, *profiling, Clock::now(), 8, probes(act, run),
                    [&act](Event e) { act.out.push_back(std::move(e)); });
    active.emplace(run, std::move(a));
    try {
        const std::vector<int32_t> prompt =
            c.raw ? model->tokenizer().encode(c.messages.back().content, true, false)
                  : tokenize_chat(*model, c.messages, true, c.extras);
        act.tel->announce(prompt, model->tokenizer());
        BatchJob job;
        job.prompt = prompt;
        job.sampling = act.tel->started().sampling;
        job.options.max_tokens = act.tel->started().max_tokens;
        job.options.stop_strings = c.stop_strings;
        if (c.json_object) {
            if (!constraint_vocab) constraint_vocab = fluoro::constraint_vocab(model->tokenizer());
            job.options.constraint = &act.json.emplace(constraint_vocab);
        }
        job.on_token = [this, &act](const GeneratedToken& t) {
            act.prefill = decoder->prefill_stats(act.slot);
            act.tel->decoded(t);
        };
        job.cancel = r.cancel;
        job.tag = run;
        act.slot = decoder->start(std::move(job));
        running.fetch_add(1);
        deliver(act);
    } catch (const ContextOverflowError& e) {
        finish(run, nullptr, e.what(), &e);
    } catch (const std::exception& e) {
        finish(run, nullptr, e.what());
    }
}

void BatchEngine::Impl::finish(uint64_t run, const BatchEnded* ended, const std::string& error,
                               const ContextOverflowError* overflow) {
    const auto it = active.find(run);
    if (it == active.end()) return;
    std::unique_ptr<Active> a = std::move(it->second);
    active.erase(it);
    if (a->slot >= 0) running.fetch_sub(1);
    if (!error.empty()) {
        a->tel->fail(error, overflow);
    } else {
        a->prefill = ended->result.prefill;
        a->tel->decode_done(ended->result);
        a->tel->finish(ended->result);
    }
    std::vector<Event> out = std::move(a->out);
    Request& r = *a->req;
    a.reset();  // the telemetry ends on this thread, before the caller may return
    // Notified under the lock: once it is released, run() may read the RunFinished, return and
    // take the request (its mutex and condition variable) with it.
    std::lock_guard<std::mutex> lock(r.mu);
    for (Event& e : out) r.mail.push_back(std::move(e));
    r.cv.notify_all();
}

void BatchEngine::Impl::save_cache(bool force) {
    if (!cache_file || !prefix) return;
    try {
        cache_file->save_if_due(*prefix, {}, 0, force);
    } catch (const std::exception&) {
        // The next save tries again; a server must not fail a request for it.
    }
}

void BatchEngine::Impl::loop() {
    for (;;) {
        std::vector<Request*> arrivals;
        bool stop = false;
        {
            std::unique_lock<std::mutex> lock(mu);
            wake.wait(lock, [&] { return stopping || !waiting.empty() || !active.empty(); });
            stop = stopping;
            while (!stop && !waiting.empty() &&
                   int64_t(arrivals.size()) + int64_t(active.size()) < opt.parallel) {
                Request* r = waiting.front();
                waiting.pop_front();
                r->admitted = true;
                if (r->cancel && r->cancel->load()) {  // its client left while it waited
                    std::lock_guard<std::mutex> rl(r->mu);
                    r->mail.emplace_back(finished_without_run("cancelled"));
                    r->cv.notify_all();
                    continue;
                }
                arrivals.push_back(r);
            }
        }
        if (stop) {
            for (BatchEnded& e : decoder->cancel_all()) finish(e.tag, &e, {});
            save_cache(true);
            return;
        }
        for (Request* r : arrivals) admit(*r);
        if (active.empty()) continue;
        BatchStep& step = last_step;  // reused: its parts keep their capacity
        std::vector<BatchEnded> ended;
        try {
            ended = decoder->step(&step);
        } catch (const std::exception& e) {
            // The decoder ends a job that fails by itself; anything else it throws ends them all
            // rather than the thread (which no one would then answer).
            for (BatchEnded& c : decoder->cancel_all()) {
                c.error = e.what();
                ended.push_back(std::move(c));
            }
        }
        const bool computed = !step.parts.empty();  // a forward ran (not only cancellations)
        if (computed) {
            steps.fetch_add(1);
            step_tokens.fetch_add(step.tokens);
        }
        // The observer first: once a request's RunFinished is out its caller may return, and
        // what the observer refers to may go with it.
        if (observer && computed) observer(step, current_load());
        for (BatchEnded& e : ended) finish(e.tag, &e, e.error);
        for (auto& [run, a] : active) deliver(*a);
        if (!ended.empty()) save_cache(false);
    }
}

BatchEngine::BatchEngine(const std::filesystem::path& model, const ModelSettings& settings,
                         BatchEngineOptions opt)
    : impl_(std::make_unique<Impl>()) {
    impl_->opt = std::move(opt);
    impl_->settings = settings;
    impl_->model_path = model.string();
    impl_->load();
    impl_->thread = std::thread([this] { impl_->loop(); });
}

BatchEngine::~BatchEngine() {
    {
        std::lock_guard<std::mutex> lock(impl_->mu);
        impl_->stopping = true;
        // Waiting requests end at once; their callers see "cancelled".
        for (Request* r : impl_->waiting) {
            r->admitted = true;
            std::lock_guard<std::mutex> rl(r->mu);
            r->mail.emplace_back(finished_without_run("cancelled"));
            r->cv.notify_all();
        }
        impl_->waiting.clear();
    }
    impl_->wake.notify_all();
    if (impl_->thread.joinable()) impl_->thread.join();
}

const ModelLoaded& BatchEngine::model() const {
    return impl_->info;
}

const BatchEngineOptions& BatchEngine::options() const {
    return impl_->opt;
}

BatchLoad BatchEngine::load() const {
    return impl_->current_load();
}

void BatchEngine::set_step_observer(
    std::function<void(const BatchStep&, const BatchLoad&)> observer) {
    impl_->observer = std::move(observer);
}

RunFinished BatchEngine::run(const Complete& c, const std::function<void(const Event&)>& on_event,
                             const std::atomic<bool>* cancel) {
    Request r;
    r.c = &c;
    r.cancel = cancel;
    {
        std::lock_guard<std::mutex> lock(impl_->mu);
        if (impl_->stopping) return finished_without_run("cancelled");
        impl_->waiting.push_back(&r);
    }
    impl_->wake.notify_all();
    std::vector<Event> batch;
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(r.mu);
            r.cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return !r.mail.empty(); });
            batch.swap(r.mail);
        }
        for (const Event& e : batch) {
            if (const auto* fin = std::get_if<RunFinished>(&e)) {
                // Stop and error ends before a run began come without other events.
                if (fin->run != 0) on_event(e);
                return *fin;
            }
            on_event(e);
        }
        batch.clear();
        if (cancel && cancel->load()) {
            // Still queued: leave the queue (once admitted, the engine ends the run itself).
            std::lock_guard<std::mutex> lock(impl_->mu);
            if (!r.admitted) {
                impl_->waiting.erase(std::find(impl_->waiting.begin(), impl_->waiting.end(), &r));
                return finished_without_run("cancelled");
            }
        }
    }
}

}  // namespace fluoro
