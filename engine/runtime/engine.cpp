#include "runtime/engine.h"

#include "runtime/engine_state.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <map>
#include <optional>
#include <tuple>

#include "backend/cpu/cpu_only_factory.h"
#include "chat/chat_options.h"
#include "chat/template_detect.h"
#include "core/error.h"
#include "core/run_errors.h"
#include "decode/chat_tokenize.h"
#include "decode/generate.h"
#include "decode/json_constraint.h"
#include "decode/sequence.h"
#include "kv/paged_kv.h"
#include "kv/prefix_cache.h"
#include "model/model.h"
#include "runtime/model_events.h"
#include "runtime/prefix_cache_persistence.h"
#include "runtime/run_telemetry.h"
#include "speculative/draft_model_drafter.h"
#include "speculative/prompt_lookup.h"
#include "speculative/spec_generate.h"
#include "telemetry/profiling_backend.h"

namespace fluoro {

namespace {

// A generation failure that rt_generate has already reported with its run id.
class ReportedError : public Error {
  public:
    using Error::Error;
};

// Drafting runs forward passes on the same backend as the target (a draft model or the target's
// own first layers): the attention capture, which describes the target, is off meanwhile.
class CaptureFreeDrafter final : public spec::Drafter {
  public:
    CaptureFreeDrafter(std::unique_ptr<spec::Drafter> inner, Backend& backend,
                       AttentionCapture& capture)
        : inner_(std::move(inner)), backend_(backend), capture_(capture) {}
    std::string_view name() const override { return inner_->name(); }
    void propose(std::span<const int32_t> context, int32_t max_n, const SamplingParams& params,
                 spec::Draft& out) override {
        const CaptureSwap off(backend_, capture_, nullptr);
        inner_->propose(context, max_n, params, out);
    }

  private:
    std::unique_ptr<spec::Drafter> inner_;
    Backend& backend_;
    AttentionCapture& capture_;
};

// Why the sliding-window layers of the conversation's cache store every token; empty when they
// may keep only their window (KvShape::window_only).
std::string swa_full_reason(const ModelSettings& ms, const KvPolicyConfig& policy) {
    if (ms.swa_full) return "--swa-full";
    if (!ms.prefix_cache_file.empty()) return "the prefix cache file stores every row";
    if (policy.kind != KvPolicyKind::Full) return "the KV policy compacts the cache";
    if (ms.backend != BackendKind::Cpu)
        return "the CUDA backend reads one block table per sequence";
    return "";
}

}  // namespace

Engine::Engine(EngineOptions opt)
    : opt_(opt),
      events_(opt.max_pending_snapshots),
      level_(opt.level),
      started_(std::chrono::steady_clock::now()),
      state_(std::make_unique<State>()),
      thread_([this] { rt_loop(); }) {}

Engine::~Engine() {
    cancel();
    queue_.close();
    if (thread_.joinable()) thread_.join();
    events_.close();
}

uint64_t Engine::submit(Command c) {
    note_capture(c);
    return queue_.push(std::move(c));
}

uint64_t Engine::submit_tagged(std::string tag, Command c) {
    note_capture(c);
    return queue_.push(std::move(c), std::move(tag));
}

void Engine::submit_blocking(Command c) {
    note_capture(c);
    auto done = std::make_shared<std::promise<void>>();
    std::future<void> f = done->get_future();
    queue_.push(std::move(c), {}, std::move(done));
    f.get();
}

void Engine::cancel() {
    std::lock_guard lock(cancel_mu_);
    cancel_upto_ = queue_.last_seq();
    cancel_flag_.store(true);
}

int64_t Engine::engine_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                started_)
        .count();
}

void Engine::rt_loop() {
    while (auto q = queue_.wait_pop()) rt_run(*q);
    rt_save_prefix_cache(true);
    state_->drop_model();
}

void Engine::rt_save_prefix_cache(bool force) {
    State& s = *state_;
    if (!s.cache_file || !s.prefix_cache || !s.seq) return;
    try {
        s.cache_file->save_if_due(*s.prefix_cache, s.seq->prefix_cacheable(), 0, force);
    } catch (const std::exception& e) {
        publish(ErrorEvent{0, "save_prefix_cache", e.what(), engine_ns()});
    }
}

// A run met a NaN or infinity: which K/V rows caused it cannot be told cheaply (a restored entry,
// the rows this prompt wrote, a kernel), so nothing it read or wrote is kept. The conversation's
// KV is forgotten (its messages are not: the next run computes them again), every prefix-cache
// entry is evicted, and the cache file is rewritten at once so a restart cannot bring one back.
// Returns what to add to the run's error.
std::string Engine::rt_drop_non_finite_state() {
    State& s = *state_;
    if (!s.seq) return {};
    s.seq->reset();
    s.drop_drafter();  // a draft model's KV too; rebuilt by the next speculative run
    int64_t entries = 0;
    if (s.prefix_cache) {
        entries = s.prefix_cache->stats().entries;
        s.prefix_cache->clear();
        rt_save_prefix_cache(true);
    }
    std::string note = "; the conversation's KV was dropped";
    if (s.prefix_cache)
        note += " and the prefix cache emptied (" + std::to_string(entries) + " entr" +
                (entries == 1 ? "y" : "ies") + ")";
    return note + ", so the next request computes its prompt afresh";
}

void Engine::rt_run(const QueuedCommand& q) {
    {
        std::lock_guard lock(cancel_mu_);
        cancel_flag_.store(q.seq <= cancel_upto_);
    }
    state_->submission = q.seq;
    try {
        rt_execute(q.command);
        if (q.done) q.done->set_value();
    } catch (const ReportedError& e) {  // a run reported its own failure (with its id)
        if (q.done) q.done->set_exception(std::make_exception_ptr(Error(e.what())));
    } catch (const std::exception& e) {
        publish(ErrorEvent{0, std::string(command_name(q.command)), e.what(), engine_ns(), q.seq});
        if (q.done) q.done->set_exception(std::make_exception_ptr(Error(e.what())));
    }
}

void Engine::rt_execute(const Command& c) {
    State& s = *state_;
    if (const auto* load = std::get_if<LoadModel>(&c)) return rt_load(*load);
    if (std::holds_alternative<UnloadModel>(c)) return rt_unload();
    if (const auto* nc = std::get_if<NewConversation>(&c)) {
        for (size_t i = 0; i < nc->messages.size(); ++i)
            if (nc->messages[i].role != "user" && nc->messages[i].role != "assistant")
                throw Error("new conversation: message " + std::to_string(i) + " has role '" +
                            nc->messages[i].role + "': only 'user' and 'assistant' turns");
        if (!nc->messages.empty() && nc->messages.back().role != "assistant")
            throw Error(
                "new conversation: the messages must end with an assistant turn (the next "
                "message is the user's)");
        if (nc->resume > s.last_conversation)
            throw Error("new conversation: there was no conversation " +
                        std::to_string(nc->resume) + " to resume");
        return rt_new_conversation(nc->system_prompt, nc->messages, nc->resume, nc->title);
    }
    if (const auto* cs = std::get_if<ChangeSettings>(&c)) return rt_settings(*cs);
    if (const auto* ac = std::get_if<SetAttentionCapture>(&c)) return rt_set_capture(*ac);
    if (!s.model) throw Error("no model is loaded: load one before sending messages");
    if (const auto* send = std::get_if<SendMessage>(&c)) {
        if (send->conversation != 0 && send->conversation != s.conversation)
            throw Error("conversation " + std::to_string(send->conversation) +
                        " is not the engine's live one (" +
                        (s.conversation == 0
                             ? std::string("none is")
                             : "conversation " + std::to_string(s.conversation) + " is") +
                        "): the message was not added; take it up again first");
        if (s.conversation == 0) rt_new_conversation(s.system_prompt);
        return rt_generate(RunKind::Send, int64_t(s.messages.size()), send->text);
    }
    if (const auto* comp = std::get_if<Complete>(&c)) return rt_complete(*comp);
    if (const auto* lens = std::get_if<ComputeLogitLens>(&c)) return rt_logit_lens(*lens);
    if (const auto* ov = std::get_if<ComputeAttentionOverview>(&c))
        return rt_attention_overview(*ov);
    if (std::holds_alternative<Regenerate>(c)) {
        if (s.messages.empty() || s.messages.back().role != "assistant")
            throw Error("nothing to regenerate: the conversation does not end with a reply");
        return rt_generate(RunKind::Regenerate, int64_t(s.messages.size()) - 1, {});
    }
    if (const auto* edit = std::get_if<EditAndResend>(&c)) {
        const int64_t i = edit->message_index;
        if (i < 0 || i >= int64_t(s.messages.size()) || s.messages[size_t(i)].role != "user")
            throw Error("cannot edit message " + std::to_string(i) + ": the conversation has " +
                        std::to_string(s.messages.size()) +
                        " messages and only user messages can be edited");
        return rt_generate(RunKind::Edit, i, edit->text);
    }
}

void Engine::rt_load(const LoadModel& c) {
    State& s = *state_;
    const ModelSettings& ms = c.settings;
    if (ms.ctx < 1) throw Error("the context size must be at least 1 token");
    if (ms.batch < 1) throw Error("the batch size must be at least 1 token");
    // The backend first: when it cannot run here (no GPU, no driver) the error leaves the
    // loaded model and its backend working.
    std::unique_ptr<Backend> backend = opt_.backend_factory
                                           ? opt_.backend_factory(ms.backend, ms.threads)
                                           : make_cpu_only_backend(ms.backend, ms.threads);
    rt_save_prefix_cache(true);
    s.drop_model();
    if (s.conversation != 0) {
        s.conversation = 0;
        s.messages.clear();
    }
    PrefixCachePersistence::Restored restored;
    try {
        s.backend = std::move(backend);
        s.backend->set_attention_impl(ms.attention);
        s.backend->set_attention_capture(s.capture.active() ? &s.capture : nullptr);
        s.profiling = std::make_unique<ProfilingBackend>(*s.backend);
        ModelLoadOptions lo;
        lo.max_batch = ms.batch;
        lo.max_logit_rows = std::min<int64_t>(kMaxDraftTokens + 1, ms.batch);  // verification
        lo.mla = ms.mla;
        s.model = Model::load(c.path, *s.profiling, lo);
        s.ctx = std::min<int64_t>(ms.ctx, int64_t(s.model->hparams().n_ctx_train));
        if (const std::string bad = s.kv_policy.problem(s.ctx); !bad.empty()) {
            // A policy chosen for another model or context must not block the load.
            publish(ErrorEvent{
                0, "load_model",
                bad + "; the KV policy is back to full for " + c.path.filename().string(),
                engine_ns()});
            s.kv_policy = KvPolicyConfig{};
        }
        if (!ms.prefix_cache_file.empty() && ms.prefix_cache_slots <= 0)
            throw Error("a prefix cache file needs prefix cache slots (there are none)");
        rt_make_kv(ms);
        if (s.prefix_cache && !ms.prefix_cache_file.empty()) {
            s.cache_file = std::make_unique<PrefixCachePersistence>(
                ms.prefix_cache_file,
                prefix_cache_key(*s.model, c.path, ms.kv_type, s.backend->name()),
                std::chrono::milliseconds(ms.prefix_cache_save_interval_ms));
            restored = s.cache_file->restore(*s.prefix_cache, 0);
        }
        s.sampler = std::make_unique<Sampler>(s.sampling, int32_t(s.model->n_vocab()));
    } catch (...) {
        s.drop_model();
        throw;
    }
    s.model_path = c.path.string();
    s.model_settings = ms;
    ModelLoaded ev = describe_loaded(*s.model, s.model_path, *s.backend, *s.profiling, ms.kv_type,
                                     s.ctx, *s.kv, restored);
    if (ev.kv_window == 0 && s.model->has_window_layers())
        ev.kv_window_note =
            "the sliding-window layers store every token: " + swa_full_reason(ms, s.kv_policy);
    publish(std::move(ev));
}

void Engine::rt_make_kv(const ModelSettings& ms) {
    State& s = *state_;
    KvShape ks;
    ks.n_ctx = s.ctx;
    ks.type = ms.kv_type;
    if (ms.prefix_cache_slots > 0) {
        ks.n_seq = 1 + ms.prefix_cache_slots;
        ks.pool_tokens = 2 * s.ctx;  // the live context, and as much again for the cache
    }
    // Sliding-window layers keep their window, a rejected draft's slots and as many again for a
    // re-rendered last turn, and the step being written.
    ks.window_only = swa_full_reason(ms, s.kv_policy).empty();
    ks.window_slack = 2 * kMaxDraftTokens;
    ks.step_tokens = ms.batch;
    // Built before the old ones go, so a failure leaves the engine as it was.
    std::unique_ptr<KvCache> kv = s.model->create_kv(ks);
    auto seq = std::make_unique<Sequence>(*s.model, *kv, 0);
    seq->set_kv_policy(s.kv_policy);
    std::unique_ptr<PrefixCache> prefix;
    if (auto* paged = dynamic_cast<PagedKvCache*>(kv.get());
        paged != nullptr && ms.prefix_cache_slots > 0) {
        prefix = std::make_unique<PrefixCache>(*paged, 1, ms.prefix_cache_slots);
        seq->set_prefix_cache(prefix.get());
    }
    // The old sequence and prefix cache go before the cache they refer to.
    s.seq = std::move(seq);
    s.prefix_cache = std::move(prefix);
    s.kv = std::move(kv);
}

void Engine::rt_unload() {
    rt_save_prefix_cache(true);
    state_->drop_model();
    state_->conversation = 0;
    state_->messages.clear();
    publish(ModelUnloaded{});
}

void Engine::rt_new_conversation(std::string system_prompt, std::vector<ChatMessage> messages,
                                 uint64_t resume, std::string title) {
    State& s = *state_;
    s.conversation = resume != 0 ? resume : ++s.last_conversation;
    s.system_prompt = std::move(system_prompt);
    s.messages = std::move(messages);
    if (s.sampler) s.sampler->reset(s.sampling.seed);  // same seed, same conversation
    publish(ConversationStarted{s.conversation, s.system_prompt, s.messages, s.submission,
                                std::move(title)});
}

void Engine::rt_complete(const Complete& c) {
    State& s = *state_;
    const std::vector<ChatMessage>& m = c.messages;
    check_complete(c);
    const size_t first = !m.empty() && m.front().role == "system" ? 1 : 0;
    // This run's settings; the engine's own come back afterwards, also on failure.
    const SamplingParams sampling = s.sampling;
    const int64_t max_tokens = s.max_tokens;
    const std::string system_prompt = s.system_prompt;
    const auto restore = [&] {
        s.sampling = sampling;
        if (s.sampler) s.sampler->set_params(sampling);
        s.max_tokens = max_tokens;
        s.system_prompt = system_prompt;
        s.stop_strings.clear();
        s.json_object = false;
        s.raw = false;
        s.extras = {};
    };
    if (c.sampling) s.sampling = *c.sampling;
    if (c.max_tokens) s.max_tokens = *c.max_tokens;
    s.stop_strings = c.stop_strings;
    s.json_object = c.json_object;
    s.raw = c.raw;
    s.extras = c.extras;
    try {
        if (c.sampling && s.sampler) s.sampler->set_params(*c.sampling);
        rt_new_conversation(first == 1 ? m.front().content : std::string(),
                            {m.begin() + std::ptrdiff_t(first), m.end() - 1});
        // The last message is the turn the reply answers: a user message, or a tool result.
        rt_generate(RunKind::Send, int64_t(s.messages.size()), m.back().content, m.back());
    } catch (...) {
        restore();
        throw;
    }
    restore();
}

void Engine::rt_settings(const ChangeSettings& c) {
    State& s = *state_;
    if (c.max_tokens && *c.max_tokens < 1)
        throw Error("max_tokens must be at least 1, not " + std::to_string(*c.max_tokens));
    if (c.sampling) {
        c.sampling->validate();
        if (s.sampler) s.sampler->set_params(*c.sampling);
        s.sampling = *c.sampling;
    }
    if (c.max_tokens) s.max_tokens = *c.max_tokens;
    if (c.system_prompt) s.system_prompt = *c.system_prompt;
    if (c.attention) {
        s.model_settings.attention = *c.attention;
        if (s.backend) s.backend->set_attention_impl(*c.attention);
    }
    if (c.speculative) {
        c.speculative->validate();
        s.spec = *c.speculative;
        s.drop_drafter();
    }
    if (c.kv_policy) {
        if (s.seq) {
            if (const std::string bad = c.kv_policy->problem(s.seq->context_size()); !bad.empty())
                throw Error(bad);
            // A policy that compacts needs every row of the sliding-window layers, and full
            // storage is no longer needed without one: the cache is rebuilt (the conversation is
            // computed again at the next message).
            const auto* paged = dynamic_cast<const PagedKvCache*>(s.kv.get());
            const bool now = paged != nullptr && paged->window_only();
            const KvPolicyConfig before = s.kv_policy;
            s.kv_policy = *c.kv_policy;
            const bool want = s.model->has_window_layers() &&
                              swa_full_reason(s.model_settings, s.kv_policy).empty();
            try {
                if (now != want && s.cache_file == nullptr)  // (a file keeps every row anyway)
                    rt_make_kv(s.model_settings);
                else
                    s.seq->set_kv_policy(*c.kv_policy);
            } catch (...) {
                s.kv_policy = before;
                throw;
            }
        }
        s.kv_policy = *c.kv_policy;
        s.drop_drafter();  // a draft cache follows the policy (rt_build_drafter)
        rt_apply_capture();
    }
}

void Engine::rt_build_drafter() {
    State& s = *state_;
    if (s.drafter || s.spec.mode == SpecMode::Off) return;
    std::unique_ptr<spec::Drafter> d;
    // The model drafters' settings. Under an evicting KV policy a draft follows the target past
    // the context with sinks + a recent window of the same budget (it sees no attention
    // statistics: CaptureFreeDrafter).
    const auto configure = [&s](std::unique_ptr<spec::DraftModelDrafter> dm) {
        dm->set_min_confidence(s.spec.draft_p_min);
        if (s.kv_policy.kind != KvPolicyKind::Full) {
            KvPolicyConfig p;
            p.kind = KvPolicyKind::Streaming;
            p.budget = s.kv_policy.budget;
            p.sinks = s.kv_policy.sinks;
            dm->set_kv_policy(p);
        }
        return dm;
    };
    switch (s.spec.mode) {
        case SpecMode::PromptLookup: {
            spec::PromptLookupOptions o;
            o.max_ngram = s.spec.ngram_max;
            o.max_draft = s.spec.max_draft;
            d = std::make_unique<spec::PromptLookupDrafter>(o);
            break;
        }
        case SpecMode::DraftModel: {
            ModelLoadOptions lo;
            lo.max_batch = s.model_settings.batch;
            lo.mla = s.model_settings.mla;
            s.draft_model = Model::load(s.spec.draft_model, *s.profiling, lo);
            spec::check_vocab_compatible(*s.model, *s.draft_model);
            s.draft_kv = s.draft_model->create_kv(s.ctx, 1, s.model_settings.kv_type);
            d = configure(std::make_unique<spec::DraftModelDrafter>(*s.draft_model, *s.draft_kv, 0,
                                                                    s.sampling.seed + 1));
            break;
        }
        case SpecMode::SelfSpeculative: {
            const auto layers = int64_t(s.model->hparams().n_layer);
            const int64_t exit = s.spec.exit_layer > 0 ? s.spec.exit_layer : layers / 2;
            s.draft_kv = s.model->create_kv(s.ctx, 1, s.model_settings.kv_type);
            d = configure(std::make_unique<spec::DraftModelDrafter>(*s.model, *s.draft_kv, 0,
                                                                    s.sampling.seed + 1, exit));
            break;
        }
        case SpecMode::Off:
            return;
    }
    s.drafter = std::make_unique<CaptureFreeDrafter>(std::move(d), *s.backend, s.capture);
}

// A step's events (capture, step, token) reach the consumer with one wake-up: with two cores,
// every extra wake-up can preempt a compute thread mid-step.
class Engine::WakeBatch {
  public:
    explicit WakeBatch(Engine& e) : e_(e) { e_.hold_wakes_ = true; }
    ~WakeBatch() {
        e_.hold_wakes_ = false;
        e_.events_.wake();
    }
    WakeBatch(const WakeBatch&) = delete;
    WakeBatch& operator=(const WakeBatch&) = delete;

  private:
    Engine& e_;
};

RunStarted Engine::rt_describe_run(RunKind kind, int64_t kept_messages, std::string user_text) {
    const State& s = *state_;
    RunStarted rs;
    rs.run = ++state_->last_run;
    rs.conversation = s.conversation;
    rs.kind = kind;
    rs.kept_messages = kept_messages;
    rs.user_text = std::move(user_text);
    rs.system_prompt = s.system_prompt;
    rs.sampling = s.sampling;
    rs.max_tokens = s.max_tokens;
    rs.submission = s.submission;
    rs.raw = s.raw;
    describe_model(rs, *s.model, s.model_path, *s.backend, s.model_settings.kv_type, s.ctx);
    return rs;
}

RunProbes Engine::rt_run_probes(uint64_t run) {
    State& s = *state_;
    RunProbes p;
    p.end_step = [this, &s, run](int64_t step, int64_t t_ns) {
        if (!s.capture.rows.empty() || !s.capture.sparsity.empty())
            rt_flush_capture(run, step, t_ns);
        rt_take_pending_capture();  // applies from the next step
    };
    p.take_evictions = [this, &s, run](int64_t step) {
        std::vector<KvEviction> out;
        for (SequenceEviction& e : s.seq->take_evictions())
            out.push_back(rt_kv_eviction(run, step, e));
        return out;
    };
    p.cached_tokens = [&s] { return s.seq->last_prefill().reused_tokens; };
    p.prefix = [&s, run](int64_t prompt_tokens, int64_t t_ns) {
        return s.prefix_event(run, prompt_tokens, t_ns);
    };
    int64_t kv_window = 0, kv_if_full = int64_t(s.kv->bytes_allocated());
    if (const auto* paged = dynamic_cast<const PagedKvCache*>(s.kv.get());
        paged != nullptr && paged->window_only()) {
        kv_window = paged->shape().max_window();
        kv_if_full = int64_t(paged->bytes_if_full());
    }
    p.memory = [&s, run, kv_window, kv_if_full](int64_t t_ns) {
        return MemoryCounters{run,
                              s.profiling->weights_bytes(),
                              int64_t(s.kv->bytes_allocated()),
                              int64_t(s.kv->bytes_used(0)),
                              s.profiling->scratch_bytes(),
                              t_ns,
                              kv_window,
                              kv_if_full};
    };
    p.kv_snapshot = [this, run](int64_t step, int64_t t_ns) {
        return rt_kv_snapshot(run, step, t_ns);
    };
    set_text_probes(p, *s.model);
    if (s.model->has_experts())
        p.take_experts = [&s]() -> std::shared_ptr<const ExpertRouting> {
            ExpertChoices& c = s.experts;
            if (c.rows == 0) return nullptr;
            auto r = std::make_shared<ExpertRouting>();
            r->n_layer = int32_t(c.experts.size());
            r->n_expert = int32_t(c.n_expert);
            r->n_used = int32_t(c.n_used);
            r->n_tokens = c.rows;
            for (size_t il = 0; il < c.experts.size(); ++il) {
                r->experts.insert(r->experts.end(), c.experts[il].begin(), c.experts[il].end());
                r->weights.insert(r->weights.end(), c.weights[il].begin(), c.weights[il].end());
            }
            c.clear();
            return r;
        };
    return p;
}

void Engine::rt_generate(RunKind kind, int64_t kept_messages, std::string user_text,
                         std::optional<ChatMessage> turn) {
    State& s = *state_;
    const auto run_start = std::chrono::steady_clock::now();
    std::vector<ChatMessage> history(s.messages.begin(), s.messages.begin() + kept_messages);
    if (kind != RunKind::Regenerate)
        history.push_back(turn ? std::move(*turn) : ChatMessage{"user", user_text});
    RunStarted started = rt_describe_run(kind, kept_messages, std::move(user_text));
    const uint64_t run_id = started.run;
    RunProbes probes = rt_run_probes(started.run);
    RunTelemetry tel(std::move(started), level_, *s.profiling, run_start, opt_.kv_snapshot_every,
                     std::move(probes), [this](Event e) { publish(std::move(e)); });
    // The routing of a mixture of experts is recorded during the run only.
    struct ExpertSink {
        Model& model;
        ExpertChoices& choices;
        ExpertSink(Model& m, ExpertChoices& c) : model(m), choices(c) {
            choices.clear();
            if (model.has_experts()) model.set_expert_sink(&choices);
        }
        ~ExpertSink() {
            model.set_expert_sink(nullptr);
            choices.clear();
        }
        ExpertSink(const ExpertSink&) = delete;
        ExpertSink& operator=(const ExpertSink&) = delete;
    } expert_sink(*s.model, s.experts);
    try {
        std::vector<ChatMessage> all;
        if (!s.system_prompt.empty()) all.push_back({"system", s.system_prompt});
        all.insert(all.end(), history.begin(), history.end());
        // A raw completion (Complete::raw) is the text of its one user message as it stands.
        const std::vector<int32_t> prompt =
            s.raw ? s.model->tokenizer().encode(history.back().content, true, false)
                  : tokenize_chat(*s.model, all, true, s.extras);
        tel.announce(prompt, s.model->tokenizer());
        rt_take_pending_capture();
        s.capture.rows.clear();
        s.capture.sparsity.clear();

        GenerateOptions gen;
        gen.max_tokens = s.max_tokens;
        gen.stop_strings = s.stop_strings;
        std::optional<JsonConstraint> json;
        if (s.json_object) {
            if (!s.constraint_vocab) s.constraint_vocab = constraint_vocab(s.model->tokenizer());
            gen.constraint = &json.emplace(s.constraint_vocab);
        }
        GenerateResult r;
        rt_build_drafter();
        if (s.drafter && !gen.constraint) {
            // Steps: the prefill, then per verification a draft and a verify.
            spec::SpecOptions so;
            so.max_draft = s.spec.max_draft;
            so.adaptive = s.spec.adaptive;
            r = spec::generate_speculative(
                *s.seq, s.model->tokenizer(), prompt, *s.sampler, *s.drafter, gen, so,
                tel.spec_callbacks(std::string(s.drafter->name())), &cancel_flag_);
        } else {
            const auto on_token = [&](const GeneratedToken& t) {
                const WakeBatch batch(*this);
                tel.decoded(t);
            };
            r = generate(*s.seq, s.model->tokenizer(), prompt, *s.sampler, gen, on_token,
                         &cancel_flag_);
            tel.decode_done(r);
        }
        history.push_back({"assistant", r.text});
        s.messages = std::move(history);
        s.lens_target = {run_id, int64_t(prompt.size()), r.tokens};
        tel.finish(r);
        rt_save_prefix_cache(false);  // after the reply is out: a save never delays it
    } catch (const std::exception& e) {
        std::string what = e.what();
        if (dynamic_cast<const NonFiniteError*>(&e)) what += rt_drop_non_finite_state();
        tel.fail(what, dynamic_cast<const ContextOverflowError*>(&e));
        throw ReportedError(what);
    }
}

}  // namespace fluoro
