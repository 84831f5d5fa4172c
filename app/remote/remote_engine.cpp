#include "remote/remote_engine.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "core/error.h"
#include "remote/prometheus_text.h"

namespace fluoro::app {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

int64_t ns_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}

// A logprob as the server wrote it; nullopt when it wrote none or null (vLLM writes -9999.0
// for "impossible", a number).
std::optional<float> logprob_of(const json& entry) {
    const auto it = entry.find("logprob");
    if (it == entry.end() || !it->is_number()) return std::nullopt;
    return it->get<float>();
}

// A token's text: its "bytes" when the server sent them (the raw bytes of a token that holds part
// of a UTF-8 character, which "token" can only show as U+FFFD), else "token".
std::string text_of(const json& entry) {
    if (const auto b = entry.find("bytes"); b != entry.end() && b->is_array()) {
        std::string raw;
        bool ok = true;
        for (const json& v : *b) {
            if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 255) {
                ok = false;
                break;
            }
            raw += char(uint8_t(v.get<int64_t>()));
        }
        if (ok) return raw;
    }
    const auto it = entry.find("token");
    return it != entry.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// OpenAI's finish_reason as the Engine's stop reasons.
std::string stop_of(const std::string& finish_reason) {
    if (finish_reason == "stop") return "eog";
    if (finish_reason == "length") return "max_tokens";
    if (finish_reason.empty()) return "eog";  // [DONE] without a reason
    return finish_reason;                     // "cancelled", "tool_calls", "content_filter"
}

double or_unknown(const std::optional<double>& v) {
    return v ? *v : -1.0;
}

}  // namespace

std::string server_load_summary(const ServerLoadEvent& now, const ServerLoadEvent* before) {
    const auto n = [](double v) {
        char b[32];
        std::snprintf(b, sizeof b, "%.0f", v);
        return std::string(b);
    };
    const auto delta = [&](double a_now, double b_now, double a_before, double b_before) {
        if (!before || a_before < 0 || b_before < 0) return std::string();
        return " (this run +" + n(a_now - a_before) + "/+" + n(b_now - b_before) + ")";
    };
    std::string s =
        "server (" + (now.names.empty() ? std::string("no known") : now.names) + " names):";
    std::vector<std::string> parts;
    if (now.running >= 0) parts.push_back("running " + n(now.running));
    if (now.waiting >= 0) parts.push_back("waiting " + n(now.waiting));
    if (now.kv_usage >= 0) {
        char b[48];
        std::snprintf(b, sizeof b, "KV cache %.1f %%", 100.0 * now.kv_usage);
        parts.push_back(b);
    }
    if (now.prefix_hits >= 0 && now.prefix_queries >= 0)
        parts.push_back(
            "prefix cache " + n(now.prefix_hits) + "/" + n(now.prefix_queries) + " tokens hit" +
            delta(now.prefix_hits, now.prefix_queries, before ? before->prefix_hits : -1,
                  before ? before->prefix_queries : -1));
    if (now.spec_accepted_tokens >= 0 && now.spec_draft_tokens > 0)
        parts.push_back("spec " + n(now.spec_accepted_tokens) + "/" + n(now.spec_draft_tokens) +
                        " accepted" +
                        delta(now.spec_accepted_tokens, now.spec_draft_tokens,
                              before ? before->spec_accepted_tokens : -1,
                              before ? before->spec_draft_tokens : -1));
    if (parts.empty()) return s + " nothing known";
    for (size_t i = 0; i < parts.size(); ++i) s += (i ? " · " : " ") + parts[i];
    return s;
}

struct RemoteEngine::State {
    bool attached = false;
    bool metrics = false;
    std::string model;
    uint64_t conversation = 0, last_conversation = RemoteEngine::kIdBase,
             last_run = RemoteEngine::kIdBase;
    std::string system_prompt;
    std::vector<ChatMessage> messages;
    SamplingParams sampling;
    int64_t max_tokens = 512;
    std::unordered_map<std::string, int32_t> ids;  // token text -> this attachment's id
};

RemoteEngine::RemoteEngine(RemoteAttach a)
    : opt_(std::move(a)),
      endpoint_(parse_endpoint(opt_.url)),
      state_(std::make_unique<State>()),
      started_(Clock::now()) {
    endpoint_.ca_file = opt_.ca_file;
    if (!opt_.api_key_env.empty())
        if (const char* k = std::getenv(opt_.api_key_env.c_str())) api_key_ = k;
    thread_ = std::thread([this] { loop(); });
}

RemoteEngine::~RemoteEngine() {
    cancel();
    queue_.close();
    if (thread_.joinable()) thread_.join();
    events_.close();
}

uint64_t RemoteEngine::submit(Command c) {
    return kIdBase + queue_.push(std::move(c));
}

uint64_t RemoteEngine::submit_tagged(std::string tag, Command c) {
    return kIdBase + queue_.push(std::move(c), std::move(tag));
}

void RemoteEngine::cancel() {
    std::lock_guard lock(cancel_mu_);
    cancel_upto_ = queue_.last_seq();
    cancel_flag_.store(true);
}

int64_t RemoteEngine::now_ns() const {
    return ns_between(started_, Clock::now());
}

void RemoteEngine::loop() {
    try {
        attach();
    } catch (const std::exception& e) {
        events_.push(ErrorEvent{0, "load_model", e.what(), now_ns(), 0});
    }
    while (std::optional<QueuedCommand> q = queue_.wait_pop()) execute(*q);
}

void RemoteEngine::execute(const QueuedCommand& q) {
    const Command& c = q.command;
    const bool generation = std::holds_alternative<SendMessage>(c) ||
                            std::holds_alternative<Regenerate>(c) ||
                            std::holds_alternative<EditAndResend>(c);
    {
        std::lock_guard lock(cancel_mu_);
        if (q.seq > cancel_upto_) cancel_flag_.store(false);
        if (generation && q.seq <= cancel_upto_) {
            events_.push(finished_without_run("cancelled"));
            return;
        }
    }
    State& s = *state_;
    const uint64_t submission = kIdBase + q.seq;
    try {
        if (const auto* cs = std::get_if<ChangeSettings>(&c)) {
            // The local engine's model-side settings (attention, KV policy, speculation) are
            // not the server's: only what a request carries applies.
            if (cs->sampling) s.sampling = *cs->sampling;
            if (cs->max_tokens) {
                if (*cs->max_tokens < 1) throw Error("max_tokens must be at least 1");
                s.max_tokens = *cs->max_tokens;
            }
            if (cs->system_prompt) s.system_prompt = *cs->system_prompt;
            return;
        }
        if (std::holds_alternative<SetAttentionCapture>(c)) return;  // nothing to capture
        if (const auto* lens = std::get_if<ComputeLogitLens>(&c)) {
            auto e = std::make_shared<LogitLensEvent>();
            e->run = lens->run;
            e->token = lens->token;
            e->error = "the logit lens needs the local engine: a remote server shows no layers";
            e->t_ns = now_ns();
            events_.push(std::shared_ptr<const LogitLensEvent>(std::move(e)));
            return;
        }
        if (const auto* ov = std::get_if<ComputeAttentionOverview>(&c)) {
            auto e = std::make_shared<AttentionOverview>();
            e->run = ov->run;
            e->token = ov->token;
            e->error =
                "the attention overview needs the local engine: a remote server shows "
                "no attention";
            events_.push(std::shared_ptr<const AttentionOverview>(std::move(e)));
            return;
        }
        if (std::holds_alternative<LoadModel>(c) || std::holds_alternative<UnloadModel>(c))
            throw Error("attached to " + endpoint_.url() +
                        ": detach (open a model file) to load a model locally");
        if (std::holds_alternative<Complete>(c))
            throw Error("attached to " + endpoint_.url() +
                        ": the window's API server serves the local engine only");
        if (const auto* nc = std::get_if<NewConversation>(&c)) {
            if (!nc->messages.empty() && nc->messages.back().role != "assistant")
                throw Error(
                    "new conversation: the messages must end with an assistant turn (the next "
                    "message is the user's)");
            s.conversation = nc->resume != 0 ? nc->resume : ++s.last_conversation;
            s.system_prompt = nc->system_prompt;
            s.messages = nc->messages;
            events_.push(ConversationStarted{s.conversation, s.system_prompt, s.messages,
                                             submission, nc->title});
            return;
        }
        if (!s.attached) throw Error("not attached to " + endpoint_.url());
        if (const auto* send = std::get_if<SendMessage>(&c)) {
            if (send->conversation != 0 && send->conversation != s.conversation)
                throw Error("conversation " + std::to_string(send->conversation) +
                            " is not the live one: the message was not added");
            if (s.conversation == 0) {
                s.conversation = ++s.last_conversation;
                s.messages.clear();
                events_.push(ConversationStarted{s.conversation, s.system_prompt, {}, submission});
            }
            return generate(RunKind::Send, int64_t(s.messages.size()), send->text, submission);
        }
        if (std::holds_alternative<Regenerate>(c)) {
            if (s.messages.empty() || s.messages.back().role != "assistant")
                throw Error("nothing to regenerate: the conversation does not end with a reply");
            return generate(RunKind::Regenerate, int64_t(s.messages.size()) - 1, {}, submission);
        }
        if (const auto* edit = std::get_if<EditAndResend>(&c)) {
            const int64_t i = edit->message_index;
            if (i < 0 || i >= int64_t(s.messages.size()) || s.messages[size_t(i)].role != "user")
                throw Error("cannot edit message " + std::to_string(i) +
                            ": only user messages of the conversation can be edited");
            return generate(RunKind::Edit, i, edit->text, submission);
        }
    } catch (const std::exception& e) {
        events_.push(ErrorEvent{0, std::string(command_name(c)), e.what(), now_ns(), submission});
    }
}

void RemoteEngine::attach() {
    State& s = *state_;
    const std::vector<std::string> ids =
        list_models(endpoint_, api_key_, std::chrono::seconds(30), &cancel_flag_);
    if (opt_.model.empty() && ids.empty())
        throw Error(endpoint_.url() + " lists no model (GET " + endpoint_.base_path + "/models)");
    s.model = opt_.model.empty() ? ids.front() : opt_.model;
    std::string metrics_error;
    if (opt_.scrape_metrics) {
        try {
            (void)parse_prometheus_text(fetch_text(endpoint_, "/metrics", api_key_,
                                                   std::chrono::seconds(30), &cancel_flag_));
            s.metrics = true;
        } catch (const std::exception& e) {
            metrics_error = e.what();
        }
    }
    s.attached = true;
    ModelLoaded m;
    m.path = endpoint_.url();
    m.name = s.model;
    m.arch = "remote";
    m.backend = "remote";
    m.chat_template = "server";
    m.chat_template_note = "the server renders the prompt with its own chat template";
    events_.push(std::move(m));
    if (!metrics_error.empty())
        events_.push(
            ErrorEvent{0, "metrics",
                       "no server-level figures (KV cache, prefix cache, queue): " + metrics_error,
                       now_ns(), 0});
}

int32_t RemoteEngine::token_id(const std::string& text) {
    auto& ids = state_->ids;
    const auto [it, added] = ids.emplace(text, int32_t(ids.size()));
    return it->second;
}

std::optional<ServerLoadEvent> RemoteEngine::scrape(uint64_t run, int64_t t_ns) {
    ServerLoadEvent e;
    e.run = run;
    e.t_ns = t_ns;
    try {
        const ServerLoad l = server_load(parse_prometheus_text(
            fetch_text(endpoint_, "/metrics", api_key_, std::chrono::seconds(30), &cancel_flag_)));
        e.names = l.names;
        e.running = or_unknown(l.running);
        e.waiting = or_unknown(l.waiting);
        e.kv_usage = or_unknown(l.kv_usage);
        e.prefix_queries = or_unknown(l.prefix_queries);
        e.prefix_hits = or_unknown(l.prefix_hits);
        e.prompt_tokens = or_unknown(l.prompt_tokens);
        e.generation_tokens = or_unknown(l.generation_tokens);
        e.spec_draft_tokens = or_unknown(l.spec_draft_tokens);
        e.spec_accepted_tokens = or_unknown(l.spec_accepted_tokens);
    } catch (const std::exception& ex) {
        if (cancel_flag_.load()) return std::nullopt;  // the run was stopped: no reading now
        // Said once; the runs go on without the figures.
        state_->metrics = false;
        events_.push(ErrorEvent{run, "metrics", ex.what(), t_ns, 0});
        return std::nullopt;
    }
    return e;
}

void RemoteEngine::generate(RunKind kind, int64_t kept, std::string user_text,
                            uint64_t submission) {
    State& s = *state_;
    const Clock::time_point t0 = Clock::now();
    const auto since = [&] { return ns_between(t0, Clock::now()); };
    std::vector<ChatMessage> history(s.messages.begin(), s.messages.begin() + kept);
    if (kind != RunKind::Regenerate) history.push_back({"user", user_text});

    RunStarted rs;
    rs.run = ++s.last_run;
    rs.conversation = s.conversation;
    rs.kind = kind;
    rs.kept_messages = kept;
    rs.user_text = std::move(user_text);
    rs.system_prompt = s.system_prompt;
    // What is sent: temperature, top_p, seed and n_probs; the rest is the server's.
    rs.sampling = s.sampling;
    rs.sampling.top_k = 0;
    rs.sampling.min_p = 0;
    rs.sampling.repeat_penalty = 1;
    rs.sampling.frequency_penalty = 0;
    rs.sampling.presence_penalty = 0;
    rs.max_tokens = s.max_tokens;
    rs.model_path = endpoint_.url();
    rs.model_name = s.model;
    rs.arch = "remote";
    rs.backend = "remote";
    rs.level = TelemetryLevel::Summary;
    rs.wall_clock_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
    rs.submission = submission;
    const uint64_t run = rs.run;
    events_.push(std::move(rs));
    if (s.metrics)
        if (std::optional<ServerLoadEvent> before = scrape(run, since()))
            events_.push(std::move(*before));

    RemoteRequest req;
    req.model = s.model;
    if (!s.system_prompt.empty()) req.messages.emplace_back("system", s.system_prompt);
    for (const ChatMessage& m : history) req.messages.emplace_back(m.role, m.content);
    req.max_tokens = s.max_tokens;
    req.temperature = double(s.sampling.temperature);
    req.top_p = double(s.sampling.top_p);
    req.seed = s.sampling.seed;
    req.top_logprobs = s.sampling.n_probs;
    req.api_key = api_key_;
    req.timeout = opt_.timeout;
    req.cancel = &cancel_flag_;

    // Chunk times are since the request was sent; events are since the run started.
    const int64_t sent_ns = since();
    int64_t tokens = 0, step = 0, first_ns = -1, prev_ns = 0;
    const auto on_chunk = [&](const RemoteChunk& chunk) {
        const int64_t t = sent_ns + int64_t(chunk.t_ms * 1e6);
        const json& entries = chunk.logprobs;
        if (first_ns < 0) {
            first_ns = t;
        } else {
            StepEvent st;
            st.run = run;
            st.index = ++step;
            st.phase = StepPhase::Decode;
            st.tokens = std::max<int64_t>(1, int64_t(entries.size()));
            st.start_ns = prev_ns;
            st.end_ns = t;
            events_.push(std::move(st), false);
        }
        prev_ns = t;
        // The chunk's text is split over its tokens when their texts make it up exactly;
        // otherwise the last one carries it all.
        std::string joined;
        for (const json& e : entries) joined += text_of(e);
        const bool exact = joined == chunk.text;
        if (entries.empty()) {
            TokenEvent te;
            te.run = run;
            te.index = tokens++;
            te.piece = chunk.text;
            te.t_ns = t;
            events_.push(std::move(te), false);
        }
        for (size_t i = 0; i < entries.size(); ++i) {
            const json& e = entries[i];
            TokenEvent te;
            te.run = run;
            te.index = tokens++;
            te.token_text = text_of(e);
            te.piece = exact ? te.token_text : (i + 1 == entries.size() ? chunk.text : "");
            // A token without a logprob has no probabilities to show (id -1).
            if (const std::optional<float> lp = logprob_of(e)) {
                te.id = token_id(te.token_text);
                te.logprob = *lp;
                if (const auto top = e.find("top_logprobs"); top != e.end() && top->is_array())
                    for (const json& alt : *top) {
                        const std::optional<float> alp =
                            alt.is_object() ? logprob_of(alt) : std::nullopt;
                        if (!alp) continue;
                        te.top_text.push_back(text_of(alt));
                        te.top.push_back(TokenProb{token_id(te.top_text.back()), *alp});
                    }
            }
            te.t_ns = t;
            events_.push(std::move(te), false);
        }
        events_.wake();
    };

    RunFinished f;
    f.run = run;
    RemoteResult r;
    try {
        r = stream_chat(endpoint_, req, on_chunk);
    } catch (const std::exception& e) {
        f.stop = "error";
        f.error = e.what();
        f.n_tokens = tokens;
        f.t_ns = since();
        events_.push(std::move(f));
        return;  // the conversation stays as it was
    }
    const int64_t prompt = std::max<int64_t>(0, r.prompt_tokens);
    if (first_ns >= 0) {
        StepEvent st;
        st.run = run;
        st.index = 0;
        st.phase = StepPhase::Prefill;
        st.tokens = prompt;
        st.start_ns = sent_ns;
        st.end_ns = first_ns;
        events_.push(std::move(st));
    }
    if (s.metrics)
        if (std::optional<ServerLoadEvent> after = scrape(run, since()))
            events_.push(std::move(*after));
    f.stop = stop_of(r.finish_reason);
    f.text = r.text;
    f.n_tokens = r.completion_tokens >= 0 && !r.cancelled ? r.completion_tokens : tokens;
    f.prompt_tokens = prompt;
    f.cached_tokens = std::max<int64_t>(0, r.cached_tokens);
    f.computed_tokens = prompt - f.cached_tokens;
    if (first_ns >= 0) {
        f.ttft_ms = double(first_ns) * 1e-6;
        f.prefill_ms = double(first_ns - sent_ns) * 1e-6;
        f.decode_ms = double(prev_ns - first_ns) * 1e-6;
        f.decode_steps = step;
    }
    f.t_ns = since();
    history.push_back({"assistant", r.text});
    s.messages = std::move(history);
    events_.push(std::move(f));
}

}  // namespace fluoro::app
