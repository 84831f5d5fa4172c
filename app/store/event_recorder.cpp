#include "store/event_recorder.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/version.h"
#include "core/sha256.h"
#include "store/iso_time.h"

namespace fluoro::app {
namespace {

std::string settings_json(const RunStarted& e) {
    const SamplingParams& p = e.sampling;
    nlohmann::json j = {{"temperature", p.temperature},
                        {"top_k", p.top_k},
                        {"top_p", p.top_p},
                        {"min_p", p.min_p},
                        {"repeat_penalty", p.repeat_penalty},
                        {"repeat_last_n", p.repeat_last_n},
                        {"frequency_penalty", p.frequency_penalty},
                        {"presence_penalty", p.presence_penalty},
                        {"seed", p.seed},
                        {"n_probs", p.n_probs},
                        {"max_tokens", e.max_tokens},
                        {"system_prompt", e.system_prompt},
                        {"ctx", e.ctx},
                        {"kv_type", e.kv_type}};
    // Only when set: a raw prompt had no template (the stored prompt_ids show it too), and the
    // settings of chat runs stay as they were.
    if (e.raw) j["raw"] = true;
    return j.dump();
}

std::string hardware_json(const RunStarted& e) {
    const nlohmann::json j = {{"backend", e.backend}, {"threads", e.threads}, {"arch", e.arch}};
    return j.dump();
}

std::string title_of(const std::string& text) {
    std::string t = text.substr(0, text.find('\n'));
    if (t.size() > 60) {
        size_t cut = 60;
        while (cut > 0 && (uint8_t(t[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 char
        t = t.substr(0, cut) + "…";
    }
    return t;
}

}  // namespace

std::string EventRecorder::model_hash(const std::string& path) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) return {};
    const auto mtime = std::filesystem::last_write_time(path, ec);
    if (ec) return {};
    const int64_t mtime_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch()).count();
    if (auto h = store_.cached_hash(path, int64_t(size), mtime_ns)) return *h;
    try {
        const std::string h = sha256_file_cached(path);  // once per process (prefix cache too)
        store_.cache_hash(path, int64_t(size), mtime_ns, h);
        return h;
    } catch (const StoreError&) {
        throw;
    } catch (const Error&) {
        return {};  // unreadable now: the run is still worth keeping
    }
}

void EventRecorder::on_start(const RunStarted& e) {
    const std::string now = iso_time_utc(e.wall_clock_ms);
    Conversation& c = state_.conversations[e.conversation];
    if (c.id == 0) {
        // Titled as it was named, else by its first user message (the history's when it
        // brought one).
        const auto first_user = std::find_if(c.history.begin(), c.history.end(),
                                             [](const ChatMessage& m) { return m.role == "user"; });
        const std::string title =
            !c.title.empty()
                ? c.title
                : title_of(first_user != c.history.end() ? first_user->content : e.user_text);
        c.id = store_.add_conversation(title, e.system_prompt, now);
        last_conversation_id_ = c.id;
        for (const ChatMessage& m : c.history) {
            const auto parent =
                c.path.empty() ? std::nullopt : std::optional<int64_t>(c.path.back());
            c.path.push_back(store_.add_message(c.id, parent, m.role, m.content, true, now));
        }
        c.history.clear();
    }
    c.path.resize(std::min<size_t>(c.path.size(), size_t(std::max<int64_t>(0, e.kept_messages))));
    const auto parent = [&]() -> std::optional<int64_t> {
        return c.path.empty() ? std::nullopt : std::optional<int64_t>(c.path.back());
    };
    if (e.kind != RunKind::Regenerate)
        c.path.push_back(store_.add_message(c.id, parent(), "user", e.user_text, true, now));
    Run r;
    r.message = store_.add_message(c.id, parent(), "assistant", "", false, now);
    r.conversation_key = int64_t(e.conversation);
    r.kept = e.kept_messages;
    r.remote = e.backend == "remote";
    RunRecord rec;
    rec.message_id = r.message;
    rec.kind = std::string(run_kind_name(e.kind));
    rec.model_path = e.model_path;
    rec.model_name = e.model_name;
    rec.model_sha256 = model_hash(e.model_path);
    rec.settings_json = settings_json(e);
    rec.hardware_json = hardware_json(e);
    rec.program_version = std::string(version());
    rec.telemetry_level = std::string(telemetry_level_name(e.level));
    rec.started_at = now;
    rec.prompt_tokens = e.prompt_tokens;
    rec.prompt_ids = e.prompt_ids;
    rec.prompt_pieces = e.prompt_pieces;
    r.id = store_.add_run(rec);
    last_run_id_ = r.id;
    state_.runs[e.run] = r;
}

void EventRecorder::on_finish(const RunFinished& e) {
    Run* r = run(e.run);
    if (!r) return;
    const bool ok = e.stop != "error";
    RunRecord rec;
    rec.stop_reason = e.stop;
    if (!e.error.empty()) rec.error = e.error;
    rec.n_tokens = e.n_tokens;
    rec.cached_tokens = e.cached_tokens;
    rec.computed_tokens = e.computed_tokens;
    rec.prefill_ms = e.prefill_ms;
    rec.ttft_ms = e.ttft_ms;
    rec.decode_ms = e.decode_ms;
    rec.decode_steps = e.decode_steps;
    rec.duration_ns = e.t_ns;
    rec.drafted_tokens = e.drafted_tokens;
    rec.accepted_tokens = e.accepted_tokens;
    rec.reasoning_tokens = e.reasoning_tokens;
    rec.reasoning_ns = e.reasoning_ns;
    store_.finish_run(r->id, rec);
    store_.update_message(r->message, ok ? e.text : r->text, ok);
    auto c = state_.conversations.find(uint64_t(r->conversation_key));
    if (c != state_.conversations.end()) {
        if (ok)
            c->second.path.push_back(r->message);
        else  // the engine dropped this turn: the branch goes back to what it kept
            c->second.path.resize(std::min<size_t>(c->second.path.size(), size_t(r->kept)));
    }
    state_.runs.erase(e.run);
}

EventRecorder::Run* EventRecorder::run(uint64_t engine_run) {
    const auto it = state_.runs.find(engine_run);
    return it == state_.runs.end() ? nullptr : &it->second;
}

void EventRecorder::apply(const Event& e) {
    if (const auto* cs = std::get_if<ConversationStarted>(&e)) {
        Conversation& c = state_.conversations[cs->conversation];
        if (c.id == 0) {
            // Stored with its first run (a conversation nothing was asked in is not kept).
            c.history = cs->messages;
            c.title = cs->title;
        } else {
            // Taken up again (NewConversation::resume): its branch goes on from those turns.
            c.path.resize(std::min(c.path.size(), cs->messages.size()));
        }
        return;
    }
    if (const auto* s = std::get_if<RunStarted>(&e)) return on_start(*s);
    if (const auto* f = std::get_if<RunFinished>(&e)) return on_finish(*f);
    Run* r = run(event_run(e));
    if (!r) return;  // engine-level events, or a run that started before recording did
    if (const auto* t = std::get_if<TokenEvent>(&e)) {
        store_.add_token(r->id, *t, r->remote);
        r->text += t->piece;
        r->dirty = true;
    } else if (const auto* s = std::get_if<StepEvent>(&e)) {
        store_.add_step(r->id, *s);
    } else if (const auto* c = std::get_if<PrefixCacheEvent>(&e)) {
        store_.add_cache_event(r->id, *c);
    } else if (const auto* m = std::get_if<MemoryCounters>(&e)) {
        store_.add_memory(r->id, *m);
    } else if (const auto* l = std::get_if<ServerLoadEvent>(&e)) {
        store_.add_server_load(r->id, *l);
    } else if (const auto* sp = std::get_if<SpecStep>(&e)) {
        store_.add_spec_step(r->id, *sp);
    } else if (const auto* kv = std::get_if<std::shared_ptr<const KvSnapshot>>(&e)) {
        store_.add_kv_snapshot(r->id, **kv);
    } else if (const auto* at = std::get_if<std::shared_ptr<const AttentionSnapshot>>(&e)) {
        store_.add_attention_snapshot(r->id, **at);
    } else if (const auto* as = std::get_if<AttentionStats>(&e)) {
        store_.add_attention_stats(r->id, *as);
    } else if (const auto* ev = std::get_if<KvEviction>(&e)) {
        store_.add_kv_eviction(r->id, *ev);
    }
}

void EventRecorder::checkpoint() {
    saved_ = state_;
}

void EventRecorder::rollback() {
    state_ = saved_;
}

void EventRecorder::end_batch() {
    for (auto& [key, r] : state_.runs) {
        if (!r.dirty) continue;
        store_.update_message(r.message, r.text, false);
        r.dirty = false;
    }
}

}  // namespace fluoro::app
