#include "store/store.h"

#include <algorithm>
#include <map>

#include "store/blob_codec.h"
#include "store/prefix_tree_codec.h"
#include "store/schema.h"

namespace fluoro::app {

struct Store::Prepared {
    explicit Prepared(Database& db)
        : token(db.prepare("INSERT INTO tokens(run_id, idx, token_id, piece, logprob, top, t_ns, "
                           "split, reasoning, reasoning_text, answer_text, top_text) "
                           "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")),
          step(db.prepare("INSERT INTO steps(run_id, idx, phase, tokens, start_ns, end_ns, op_ns, "
                          "experts, trace) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)")),
          memory(db.prepare("INSERT INTO memory_counters(run_id, t_ns, weights_bytes, kv_bytes, "
                            "kv_used_bytes, scratch_bytes) VALUES(?, ?, ?, ?, ?, ?)")),
          snapshot(db.prepare("INSERT INTO snapshots(run_id, kind, step, t_ns, data, key_begin) "
                              "VALUES(?, ?, ?, ?, ?, ?)")),
          attention_stats(db.prepare(
              "INSERT INTO attention_stats(run_id, step, t_ns, n_layer, n_head, top_k, threshold, "
              "n_keys, heads) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)")),
          kv_eviction(db.prepare(
              "INSERT INTO kv_evictions(run_id, step, t_ns, policy, budget, length_before, ms, "
              "evicted, kept, reasons) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")),
          update_message(db.prepare("UPDATE messages SET content = ?, complete = ? WHERE id = ?")) {
    }
    Statement token, step, memory, snapshot, attention_stats, kv_eviction, update_message;
};

Store::Store(const std::filesystem::path& path)
    : db_(open_session_db(path)), st_(std::make_unique<Prepared>(*db_)) {}

Store::~Store() = default;

int64_t Store::add_conversation(const std::string& title, const std::string& system_prompt,
                                const std::string& created_at) {
    db_->prepare("INSERT INTO conversations(title, system_prompt, created_at) VALUES(?, ?, ?)")
        .bind(1, title)
        .bind(2, system_prompt)
        .bind(3, created_at)
        .run();
    return db_->last_insert_id();
}

int64_t Store::add_message(int64_t conversation, std::optional<int64_t> parent,
                           const std::string& role, const std::string& content, bool complete,
                           const std::string& created_at) {
    db_->prepare(
           "INSERT INTO messages(conversation_id, parent_id, role, content, complete, created_at) "
           "VALUES(?, ?, ?, ?, ?, ?)")
        .bind(1, conversation)
        .bind(2, parent)
        .bind(3, role)
        .bind(4, content)
        .bind(5, int64_t(complete))
        .bind(6, created_at)
        .run();
    return db_->last_insert_id();
}

void Store::update_message(int64_t id, const std::string& content, bool complete) {
    st_->update_message.bind(1, content).bind(2, int64_t(complete)).bind(3, id).run();
}

int64_t Store::add_run(const RunRecord& r) {
    db_->prepare(
           "INSERT INTO runs(message_id, kind, model_path, model_name, model_sha256, settings, "
           "hardware, program_version, telemetry_level, started_at, prompt_tokens, prompt_ids, "
           "prompt_pieces) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        .bind(1, r.message_id)
        .bind(2, r.kind)
        .bind(3, r.model_path)
        .bind(4, r.model_name)
        .bind(5, r.model_sha256)
        .bind(6, r.settings_json)
        .bind(7, r.hardware_json)
        .bind(8, r.program_version)
        .bind(9, r.telemetry_level)
        .bind(10, r.started_at)
        .bind(11, r.prompt_tokens)
        .bind(12, encode_ids(r.prompt_ids))
        .bind(13, encode_pieces(r.prompt_pieces))
        .run();
    return db_->last_insert_id();
}

void Store::finish_run(int64_t id, const RunRecord& r) {
    db_->prepare(
           "UPDATE runs SET stop_reason = ?, error = ?, n_tokens = ?, cached_tokens = ?, "
           "computed_tokens = ?, prefill_ms = ?, ttft_ms = ?, decode_ms = ?, decode_steps = ?, "
           "duration_ns = ?, drafted_tokens = ?, accepted_tokens = ?, reasoning_tokens = ?, "
           "reasoning_ns = ? WHERE id = ?")
        .bind(1, r.stop_reason)
        .bind(2, r.error)
        .bind(3, r.n_tokens)
        .bind(4, r.cached_tokens)
        .bind(5, r.computed_tokens)
        .bind(6, r.prefill_ms)
        .bind(7, r.ttft_ms)
        .bind(8, r.decode_ms)
        .bind(9, r.decode_steps)
        .bind(10, r.duration_ns)
        .bind(11, r.drafted_tokens)
        .bind(12, r.accepted_tokens)
        .bind(13, r.reasoning_tokens)
        .bind(14, r.reasoning_ns)
        .bind(15, id)
        .run();
}

void Store::add_server_load(int64_t run, const ServerLoadEvent& l) {
    db_->prepare(
           "INSERT INTO server_loads(run_id, t_ns, names, running, waiting, kv_usage, "
           "prefix_queries, prefix_hits, prompt_tokens, generation_tokens, spec_draft_tokens, "
           "spec_accepted_tokens) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        .bind(1, run)
        .bind(2, l.t_ns)
        .bind(3, l.names)
        .bind(4, l.running)
        .bind(5, l.waiting)
        .bind(6, l.kv_usage)
        .bind(7, l.prefix_queries)
        .bind(8, l.prefix_hits)
        .bind(9, l.prompt_tokens)
        .bind(10, l.generation_tokens)
        .bind(11, l.spec_draft_tokens)
        .bind(12, l.spec_accepted_tokens)
        .run();
}

void Store::add_token(int64_t run, const TokenEvent& t, bool with_top_text) {
    st_->token.bind(1, run)
        .bind(2, t.index)
        .bind(3, int64_t(t.id))
        .bind(4, t.piece)
        .bind(5, double(t.logprob))
        .bind(6, encode_top(t.top))
        .bind(7, t.t_ns)
        .bind(8, int64_t(t.split))
        .bind(9, int64_t(t.reasoning))
        .bind(10, t.reasoning_text)
        .bind(11, t.answer_text)
        .bind(12, with_top_text ? encode_pieces(t.top_text) : std::vector<uint8_t>())
        .run();
}

void Store::add_step(int64_t run, const StepEvent& s) {
    st_->step.bind(1, run)
        .bind(2, s.index)
        .bind(3, step_phase_name(s.phase))
        .bind(4, s.tokens)
        .bind(5, s.start_ns)
        .bind(6, s.end_ns)
        .bind(7, encode_op_ns(s.op_ns))
        .bind(8, encode_experts(s.experts.get()))
        .bind(9, encode_trace(s.trace.get()))
        .run();
}

void Store::add_cache_event(int64_t run, const PrefixCacheEvent& c) {
    db_->prepare(
           "INSERT INTO cache_events(run_id, t_ns, prompt_tokens, cached_tokens, "
           "computed_tokens, evicted_tokens, source, diverge_at, diverge_prompt_token, "
           "diverge_cached_token, diverge_cached_piece, evicted_entries, cache_entries, "
           "cache_tokens, tree) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        .bind(1, run)
        .bind(2, c.t_ns)
        .bind(3, c.prompt_tokens)
        .bind(4, c.cached_tokens)
        .bind(5, c.computed_tokens)
        .bind(6, c.evicted_tokens)
        .bind(7, c.source)
        .bind(8, c.diverge_at)
        .bind(9, int64_t(c.diverge_prompt_token))
        .bind(10, int64_t(c.diverge_cached_token))
        .bind(11, c.diverge_cached_piece)
        .bind(12, c.evicted_entries)
        .bind(13, c.cache_entries)
        .bind(14, c.cache_tokens)
        .bind(15, encode_prefix_tree(c.tree))
        .run();
}

void Store::add_memory(int64_t run, const MemoryCounters& m) {
    st_->memory.bind(1, run)
        .bind(2, m.t_ns)
        .bind(3, m.weights_bytes)
        .bind(4, m.kv_bytes)
        .bind(5, m.kv_used_bytes)
        .bind(6, m.scratch_bytes)
        .run();
}

void Store::add_spec_step(int64_t run, const SpecStep& s) {
    db_->prepare(
           "INSERT INTO spec_events(run_id, step, t_ns, drafter, accepted, resampled, drafted, "
           "bonus, draft_ns, verify_ns) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        .bind(1, run)
        .bind(2, s.step)
        .bind(3, s.t_ns)
        .bind(4, s.drafter)
        .bind(5, int64_t(s.accepted))
        .bind(6, int64_t(s.resampled))
        .bind(7, encode_drafted(s.drafted))
        .bind(8, int64_t(s.bonus))
        .bind(9, s.draft_ns)
        .bind(10, s.verify_ns)
        .run();
}

void Store::add_kv_snapshot(int64_t run, const KvSnapshot& s) {
    st_->snapshot.bind(1, run)
        .bind(2, "kv")
        .bind(3, s.step)
        .bind(4, s.t_ns)
        .bind(5, encode_kv(s))
        .bind(6, int64_t(0))
        .run();
}

void Store::add_attention_snapshot(int64_t run, const AttentionSnapshot& s) {
    st_->snapshot.bind(1, run)
        .bind(2, "attention")
        .bind(3, s.step)
        .bind(4, s.t_ns)
        .bind(5, encode_attention(s))
        .bind(6, s.key_begin)
        .run();
}

void Store::add_attention_stats(int64_t run, const AttentionStats& s) {
    st_->attention_stats.bind(1, run)
        .bind(2, s.step)
        .bind(3, s.t_ns)
        .bind(4, int64_t(s.n_layer))
        .bind(5, int64_t(s.n_head))
        .bind(6, int64_t(s.top_k))
        .bind(7, double(s.threshold))
        .bind(8, s.n_keys)
        .bind(9, encode_head_stats(s.heads))
        .run();
}

void Store::add_kv_eviction(int64_t run, const KvEviction& e) {
    st_->kv_eviction.bind(1, run)
        .bind(2, e.step)
        .bind(3, e.t_ns)
        .bind(4, e.policy)
        .bind(5, e.budget)
        .bind(6, e.length_before)
        .bind(7, e.ms)
        .bind(8, encode_positions(e.evicted))
        .bind(9, encode_positions(e.kept))
        .bind(10, std::span<const uint8_t>(e.reasons))
        .run();
}

int64_t Store::insert_conversation(const ConversationRecord& c) {
    Transaction tx(*db_);
    const int64_t conv = add_conversation(c.title, c.system_prompt, c.created_at);
    std::map<int64_t, int64_t> message_ids;  // record id -> new id
    for (const auto& m : c.messages) {
        std::optional<int64_t> parent;
        if (m.parent_id) {
            const auto it = message_ids.find(*m.parent_id);
            if (it == message_ids.end())
                throw StoreError("message " + std::to_string(m.id) + " names parent " +
                                 std::to_string(*m.parent_id) + ", which does not precede it");
            parent = it->second;
        }
        message_ids[m.id] = add_message(conv, parent, m.role, m.content, m.complete, m.created_at);
    }
    for (const auto& r : c.runs) {
        const auto it = message_ids.find(r.message_id);
        if (it == message_ids.end())
            throw StoreError("run " + std::to_string(r.id) + " names message " +
                             std::to_string(r.message_id) + ", which is not in the conversation");
        RunRecord header = r;
        header.message_id = it->second;
        const int64_t run = add_run(header);
        finish_run(run, r);
        for (const auto& t : r.tokens) add_token(run, t, !t.top_text.empty());
        for (const auto& l : r.server_loads) add_server_load(run, l);
        for (const auto& s : r.steps) add_step(run, s);
        for (const auto& e : r.cache_events) add_cache_event(run, e);
        for (const auto& m : r.memory) add_memory(run, m);
        for (const auto& s : r.spec_steps) add_spec_step(run, s);
        for (const auto& s : r.kv_snapshots) add_kv_snapshot(run, *s);
        for (const auto& s : r.attention_snapshots) add_attention_snapshot(run, *s);
        for (const auto& s : r.attention_stats) add_attention_stats(run, s);
        for (const auto& e : r.kv_evictions) add_kv_eviction(run, e);
    }
    tx.commit();
    return conv;
}

namespace {

constexpr const char* kSummaryColumns =
    "SELECT c.id, c.title, c.created_at, "
    "(SELECT count(*) FROM messages m WHERE m.conversation_id = c.id), "
    "(SELECT count(*) FROM runs r JOIN messages m ON r.message_id = m.id "
    "  WHERE m.conversation_id = c.id), "
    "(SELECT count(*) FROM messages m WHERE m.conversation_id = c.id AND m.complete = 0) "
    "FROM conversations c ";

std::vector<ConversationSummary> read_summaries(Statement& st) {
    std::vector<ConversationSummary> out;
    while (st.step())
        out.push_back({st.int64(0), st.text(1), st.text(2), st.int64(3), st.int64(4), st.int64(5)});
    return out;
}

// `text` as a LIKE pattern matching it anywhere, with LIKE's wildcards escaped by '\'.
std::string like_pattern(const std::string& text) {
    std::string p = "%";
    for (char ch : text) {
        if (ch == '%' || ch == '_' || ch == '\\') p += '\\';
        p += ch;
    }
    return p + "%";
}

}  // namespace

std::vector<ConversationSummary> Store::list_conversations() {
    Statement st = db_->prepare(std::string(kSummaryColumns) + "ORDER BY c.id");
    return read_summaries(st);
}

std::vector<ConversationSummary> Store::search_conversations(const std::string& text) {
    if (text.empty()) return list_conversations();
    Statement st = db_->prepare(
        std::string(kSummaryColumns) +
        "WHERE c.title LIKE ?1 ESCAPE '\\' OR EXISTS (SELECT 1 FROM messages m "
        "WHERE m.conversation_id = c.id AND m.content LIKE ?1 ESCAPE '\\') ORDER BY c.id");
    st.bind(1, like_pattern(text));
    return read_summaries(st);
}

void Store::rename_conversation(int64_t id, const std::string& title) {
    db_->prepare("UPDATE conversations SET title = ? WHERE id = ?")
        .bind(1, title)
        .bind(2, id)
        .run();
    if (sqlite3_changes(db_->handle()) == 0)
        throw StoreError("no conversation " + std::to_string(id) + " in " + path().string(),
                         SQLITE_NOTFOUND);
}

namespace {

constexpr const char* kRunColumns =
    "id, message_id, kind, model_path, model_name, model_sha256, settings, hardware, "
    "program_version, telemetry_level, started_at, prompt_tokens, stop_reason, error, n_tokens, "
    "cached_tokens, computed_tokens, prefill_ms, ttft_ms, decode_ms, decode_steps, duration_ns, "
    "prompt_ids, prompt_pieces, drafted_tokens, accepted_tokens, reasoning_tokens, reasoning_ns";

void read_run_columns(const Statement& st, RunRecord& r) {
    r.id = st.int64(0);
    r.message_id = st.int64(1);
    r.kind = st.text(2);
    r.model_path = st.text(3);
    r.model_name = st.text(4);
    r.model_sha256 = st.text(5);
    r.settings_json = st.text(6);
    r.hardware_json = st.text(7);
    r.program_version = st.text(8);
    r.telemetry_level = st.text(9);
    r.started_at = st.text(10);
    r.prompt_tokens = st.int64(11);
    if (!st.is_null(12)) r.stop_reason = st.text(12);
    if (!st.is_null(13)) r.error = st.text(13);
    r.n_tokens = st.int64(14);
    r.cached_tokens = st.int64(15);
    r.computed_tokens = st.int64(16);
    r.prefill_ms = st.real(17);
    r.ttft_ms = st.real(18);
    r.decode_ms = st.real(19);
    r.decode_steps = st.int64(20);
    r.duration_ns = st.int64(21);
    r.prompt_ids = decode_ids(st.blob(22));
    r.prompt_pieces = decode_pieces(st.blob(23));
    r.drafted_tokens = st.int64(24);
    r.accepted_tokens = st.int64(25);
    r.reasoning_tokens = st.int64(26);
    r.reasoning_ns = st.int64(27);
}

// A malformed row names the file and the run.
StoreError in_run(const StoreError& e, const std::filesystem::path& file, int64_t run) {
    return StoreError(file.string() + ": run " + std::to_string(run) + ": " + e.what(), e.code());
}

RunRecord read_run_row(const Statement& st, const std::filesystem::path& file) {
    RunRecord r;
    try {
        read_run_columns(st, r);
    } catch (const StoreError& e) {
        throw in_run(e, file, r.id);
    }
    return r;
}

StepPhase parse_phase(const std::string& s) {
    for (auto p : {StepPhase::Prefill, StepPhase::Decode, StepPhase::Draft, StepPhase::Verify})
        if (step_phase_name(p) == s) return p;
    throw StoreError("unknown step phase '" + s + "' in the steps table", SQLITE_CORRUPT);
}

}  // namespace

ConversationRecord Store::load_conversation(int64_t id) {
    ConversationRecord c;
    {
        Statement st = db_->prepare(
            "SELECT id, title, system_prompt, created_at FROM conversations WHERE id = ?");
        st.bind(1, id);
        if (!st.step())
            throw StoreError("no conversation " + std::to_string(id) + " in " + path().string(),
                             SQLITE_NOTFOUND);
        c.id = st.int64(0);
        c.title = st.text(1);
        c.system_prompt = st.text(2);
        c.created_at = st.text(3);
    }
    Statement msgs = db_->prepare(
        "SELECT id, parent_id, role, content, complete, created_at FROM messages "
        "WHERE conversation_id = ? ORDER BY id");
    msgs.bind(1, id);
    while (msgs.step()) {
        MessageRecord m;
        m.id = msgs.int64(0);
        if (!msgs.is_null(1)) m.parent_id = msgs.int64(1);
        m.role = msgs.text(2);
        m.content = msgs.text(3);
        m.complete = msgs.int64(4) != 0;
        m.created_at = msgs.text(5);
        c.messages.push_back(std::move(m));
    }
    Statement runs = db_->prepare(std::string("SELECT ") + kRunColumns +
                                  " FROM runs WHERE message_id IN (SELECT id FROM messages WHERE "
                                  "conversation_id = ?) ORDER BY id");
    runs.bind(1, id);
    while (runs.step()) c.runs.push_back(read_run_row(runs, path()));
    for (auto& r : c.runs) load_run_details(r);
    return c;
}

RunRecord Store::load_run(int64_t id) {
    Statement st = db_->prepare(std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?");
    st.bind(1, id);
    if (!st.step())
        throw StoreError("no run " + std::to_string(id) + " in " + path().string(),
                         SQLITE_NOTFOUND);
    RunRecord r = read_run_row(st, path());
    load_run_details(r);
    return r;
}

int64_t Store::conversation_of_run(int64_t run) {
    Statement st = db_->prepare(
        "SELECT m.conversation_id FROM runs r JOIN messages m ON r.message_id = m.id "
        "WHERE r.id = ?");
    st.bind(1, run);
    if (!st.step())
        throw StoreError("no run " + std::to_string(run) + " in " + path().string(),
                         SQLITE_NOTFOUND);
    return st.int64(0);
}

void Store::load_run_details(RunRecord& r) {
    try {
        load_run_rows(r);
    } catch (const StoreError& e) {
        throw in_run(e, path(), r.id);
    }
}

void Store::load_run_rows(RunRecord& r) {
    const uint64_t run = uint64_t(r.id);
    {
        Statement st = db_->prepare(
            "SELECT idx, token_id, piece, logprob, top, t_ns, split, reasoning, reasoning_text, "
            "answer_text, top_text FROM tokens WHERE run_id = ? ORDER BY idx");
        st.bind(1, r.id);
        while (st.step()) {
            TokenEvent t{run,        st.int64(0),       int32_t(st.int64(1)),
                         st.text(2), float(st.real(3)), decode_top(st.blob(4)),
                         st.int64(5)};
            t.split = st.int64(6) != 0;
            t.reasoning = st.int64(7) != 0;
            t.reasoning_text = st.text(8);
            t.answer_text = st.text(9);
            t.top_text = decode_pieces(st.blob(10));
            if (!t.top_text.empty() && t.top_text.size() != t.top.size())
                throw StoreError("token " + std::to_string(t.index) + " has " +
                                     std::to_string(t.top.size()) + " alternatives but " +
                                     std::to_string(t.top_text.size()) + " texts",
                                 SQLITE_CORRUPT);
            r.tokens.push_back(std::move(t));
        }
    }
    {
        Statement st = db_->prepare(
            "SELECT idx, phase, tokens, start_ns, end_ns, op_ns, experts, trace FROM steps WHERE "
            "run_id = ? ORDER BY idx");
        st.bind(1, r.id);
        while (st.step()) {
            StepEvent s{run,         st.int64(0), parse_phase(st.text(1)), st.int64(2),
                        st.int64(3), st.int64(4), decode_op_ns(st.blob(5))};
            s.experts = decode_experts(st.blob(6));
            if (s.experts && s.experts->n_tokens != s.tokens)
                throw StoreError("malformed experts blob of step " + std::to_string(s.index) +
                                     ": " + std::to_string(s.experts->n_tokens) +
                                     " tokens routed in a step of " + std::to_string(s.tokens),
                                 SQLITE_CORRUPT);
            try {
                s.trace = decode_trace(st.blob(7));
            } catch (const StoreError& e) {
                throw StoreError("step " + std::to_string(s.index) + ": " + e.what(),
                                 SQLITE_CORRUPT);
            }
            r.steps.push_back(std::move(s));
        }
    }
    {
        Statement st = db_->prepare(
            "SELECT t_ns, prompt_tokens, cached_tokens, computed_tokens, evicted_tokens, source, "
            "diverge_at, diverge_prompt_token, diverge_cached_token, evicted_entries, "
            "cache_entries, cache_tokens, diverge_cached_piece, tree FROM cache_events WHERE "
            "run_id = ? "
            "ORDER BY id");
        st.bind(1, r.id);
        while (st.step()) {
            PrefixCacheEvent c;
            c.run = run;
            c.prompt_tokens = st.int64(1);
            c.cached_tokens = st.int64(2);
            c.computed_tokens = st.int64(3);
            c.evicted_tokens = st.int64(4);
            c.t_ns = st.int64(0);
            c.source = st.text(5);
            c.diverge_at = st.int64(6);
            c.diverge_prompt_token = int32_t(st.int64(7));
            c.diverge_cached_token = int32_t(st.int64(8));
            c.evicted_entries = st.int64(9);
            c.cache_entries = st.int64(10);
            c.cache_tokens = st.int64(11);
            c.diverge_cached_piece = st.text(12);
            c.tree = decode_prefix_tree(
                st.text(13), path().string() + ": run " + std::to_string(r.id) + "'s cache event");
            r.cache_events.push_back(std::move(c));
        }
    }
    {
        Statement st = db_->prepare(
            "SELECT t_ns, names, running, waiting, kv_usage, prefix_queries, prefix_hits, "
            "prompt_tokens, generation_tokens, spec_draft_tokens, spec_accepted_tokens FROM "
            "server_loads WHERE run_id = ? ORDER BY id");
        st.bind(1, r.id);
        while (st.step()) {
            ServerLoadEvent l;
            l.run = run;
            l.t_ns = st.int64(0);
            l.names = st.text(1);
            l.running = st.real(2);
            l.waiting = st.real(3);
            l.kv_usage = st.real(4);
            l.prefix_queries = st.real(5);
            l.prefix_hits = st.real(6);
            l.prompt_tokens = st.real(7);
            l.generation_tokens = st.real(8);
            l.spec_draft_tokens = st.real(9);
            l.spec_accepted_tokens = st.real(10);
            r.server_loads.push_back(std::move(l));
        }
    }
    {
        Statement st = db_->prepare(
            "SELECT t_ns, weights_bytes, kv_bytes, kv_used_bytes, scratch_bytes FROM "
            "memory_counters WHERE run_id = ? ORDER BY id");
        st.bind(1, r.id);
        while (st.step())
            r.memory.push_back(MemoryCounters{run, st.int64(1), st.int64(2), st.int64(3),
                                              st.int64(4), st.int64(0)});
    }
    {
        Statement st = db_->prepare(
            "SELECT step, t_ns, drafter, accepted, resampled, drafted, bonus, draft_ns, verify_ns "
            "FROM spec_events WHERE run_id = ? ORDER BY id");
        st.bind(1, r.id);
        while (st.step())
            r.spec_steps.push_back(SpecStep{.run = run,
                                            .step = st.int64(0),
                                            .drafter = st.text(2),
                                            .drafted = decode_drafted(st.blob(5)),
                                            .accepted = int32_t(st.int64(3)),
                                            .resampled = int32_t(st.int64(4)),
                                            .bonus = int32_t(st.int64(6)),
                                            .draft_ns = st.int64(7),
                                            .verify_ns = st.int64(8),
                                            .t_ns = st.int64(1)});
    }
    {
        Statement st = db_->prepare(
            "SELECT kind, step, t_ns, data, key_begin FROM snapshots WHERE run_id = ? ORDER BY id");
        st.bind(1, r.id);
        while (st.step()) {
            if (st.text(0) == "kv") {
                auto s = std::make_shared<KvSnapshot>();
                s->run = run;
                s->step = st.int64(1);
                s->t_ns = st.int64(2);
                decode_kv(st.blob(3), *s);
                r.kv_snapshots.push_back(std::move(s));
            } else {
                auto s = std::make_shared<AttentionSnapshot>();
                s->run = run;
                s->step = st.int64(1);
                s->t_ns = st.int64(2);
                decode_attention(st.blob(3), *s);
                s->key_begin = st.int64(4);
                if (s->key_begin < 0)
                    throw StoreError(
                        "malformed attention snapshot: key_begin " + std::to_string(s->key_begin),
                        SQLITE_CORRUPT);
                r.attention_snapshots.push_back(std::move(s));
            }
        }
    }
    {
        Statement st = db_->prepare(
            "SELECT step, t_ns, n_layer, n_head, top_k, threshold, n_keys, heads FROM "
            "attention_stats WHERE run_id = ? ORDER BY id");
        st.bind(1, r.id);
        while (st.step()) {
            AttentionStats s;
            s.run = run;
            s.step = st.int64(0);
            s.t_ns = st.int64(1);
            s.n_layer = int32_t(st.int64(2));
            s.n_head = int32_t(st.int64(3));
            s.top_k = int32_t(st.int64(4));
            s.threshold = float(st.real(5));
            s.n_keys = st.int64(6);
            s.heads = decode_head_stats(st.blob(7));
            if (s.n_layer < 0 || s.n_head < 0 ||
                uint64_t(s.n_layer) * uint64_t(s.n_head) != s.heads.size())
                throw StoreError(
                    "malformed attention_stats row: " + std::to_string(s.heads.size()) +
                        " heads for " + std::to_string(s.n_layer) + " layers x " +
                        std::to_string(s.n_head) + " heads",
                    SQLITE_CORRUPT);
            r.attention_stats.push_back(std::move(s));
        }
    }
    load_kv_evictions(r);
}

void Store::load_kv_evictions(RunRecord& r) {
    Statement st = db_->prepare(
        "SELECT step, t_ns, policy, budget, length_before, ms, evicted, kept, reasons FROM "
        "kv_evictions WHERE run_id = ? ORDER BY id");
    st.bind(1, r.id);
    while (st.step()) {
        KvEviction e;
        e.run = uint64_t(r.id);
        e.step = st.int64(0);
        e.t_ns = st.int64(1);
        e.policy = st.text(2);
        e.budget = st.int64(3);
        e.length_before = st.int64(4);
        e.ms = st.real(5);
        const size_t most = size_t(std::max<int64_t>(e.length_before, 0));
        e.evicted = decode_positions(st.blob(6), most);
        e.kept = decode_positions(st.blob(7), most);
        const auto reasons = st.blob(8);
        e.reasons.assign(reasons.begin(), reasons.end());
        if (e.reasons.size() != e.kept.size())
            throw StoreError("malformed kv_evictions row: " + std::to_string(e.reasons.size()) +
                                 " reasons for " + std::to_string(e.kept.size()) +
                                 " kept positions",
                             SQLITE_CORRUPT);
        r.kv_evictions.push_back(std::move(e));
    }
}

void Store::delete_conversation(int64_t id) {
    db_->prepare("DELETE FROM conversations WHERE id = ?").bind(1, id).run();
    if (sqlite3_changes(db_->handle()) == 0)
        throw StoreError("no conversation " + std::to_string(id) + " in " + path().string(),
                         SQLITE_NOTFOUND);
}

std::optional<std::string> Store::cached_hash(const std::string& path, int64_t size,
                                              int64_t mtime) {
    Statement st = db_->prepare(
        "SELECT sha256 FROM model_hashes WHERE path = ? AND size = ? AND mtime_ns = ?");
    st.bind(1, path).bind(2, size).bind(3, mtime);
    if (!st.step()) return std::nullopt;
    return st.text(0);
}

void Store::cache_hash(const std::string& path, int64_t size, int64_t mtime,
                       const std::string& hex) {
    db_->prepare(
           "INSERT OR REPLACE INTO model_hashes(path, size, mtime_ns, sha256) "
           "VALUES(?, ?, ?, ?)")
        .bind(1, path)
        .bind(2, size)
        .bind(3, mtime)
        .bind(4, hex)
        .run();
}

}  // namespace fluoro::app
