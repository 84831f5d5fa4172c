#include "store/schema.h"

#include <array>
#include <fstream>

namespace fluoro::app {
namespace {

constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE conversations(
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    system_prompt TEXT NOT NULL,
    created_at TEXT NOT NULL);
CREATE TABLE messages(
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    parent_id INTEGER REFERENCES messages(id) ON DELETE CASCADE,
    role TEXT NOT NULL CHECK(role IN ('system', 'user', 'assistant')),
    content TEXT NOT NULL,
    complete INTEGER NOT NULL,
    created_at TEXT NOT NULL);
CREATE INDEX messages_by_conversation ON messages(conversation_id, id);
CREATE TABLE runs(
    id INTEGER PRIMARY KEY,
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    model_path TEXT NOT NULL,
    model_name TEXT NOT NULL,
    model_sha256 TEXT NOT NULL,
    settings TEXT NOT NULL,
    hardware TEXT NOT NULL,
    program_version TEXT NOT NULL,
    telemetry_level TEXT NOT NULL,
    started_at TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    stop_reason TEXT,
    error TEXT,
    n_tokens INTEGER,
    cached_tokens INTEGER,
    computed_tokens INTEGER,
    prefill_ms REAL,
    ttft_ms REAL,
    decode_ms REAL,
    decode_steps INTEGER,
    duration_ns INTEGER);
CREATE INDEX runs_by_message ON runs(message_id);
CREATE TABLE tokens(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    token_id INTEGER NOT NULL,
    piece TEXT NOT NULL,
    logprob REAL NOT NULL,
    top BLOB NOT NULL,
    t_ns INTEGER NOT NULL,
    PRIMARY KEY(run_id, idx)) WITHOUT ROWID;
CREATE TABLE steps(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    phase TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    start_ns INTEGER NOT NULL,
    end_ns INTEGER NOT NULL,
    op_ns BLOB NOT NULL,
    PRIMARY KEY(run_id, idx)) WITHOUT ROWID;
CREATE TABLE snapshots(
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK(kind IN ('attention', 'kv')),
    step INTEGER NOT NULL,
    t_ns INTEGER NOT NULL,
    data BLOB NOT NULL);
CREATE INDEX snapshots_by_run ON snapshots(run_id, id);
CREATE TABLE spec_events(
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step INTEGER NOT NULL,
    t_ns INTEGER NOT NULL,
    drafter TEXT NOT NULL,
    accepted INTEGER NOT NULL,
    resampled INTEGER NOT NULL,
    drafted BLOB NOT NULL);
CREATE INDEX spec_by_run ON spec_events(run_id, id);
CREATE TABLE cache_events(
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    t_ns INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL,
    computed_tokens INTEGER NOT NULL,
    evicted_tokens INTEGER NOT NULL);
CREATE INDEX cache_by_run ON cache_events(run_id, id);
)sql";

constexpr const char* kMigrateV1ToV2 = R"sql(
CREATE TABLE memory_counters(
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    t_ns INTEGER NOT NULL,
    weights_bytes INTEGER NOT NULL,
    kv_bytes INTEGER NOT NULL,
    kv_used_bytes INTEGER NOT NULL,
    scratch_bytes INTEGER NOT NULL);
CREATE INDEX memory_by_run ON memory_counters(run_id, id);
CREATE TABLE model_hashes(
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY(path, size, mtime_ns));
)sql";

// v3: the prompt's tokens and the speculative totals per run, the key offset of attention
// snapshots, bonus token and timings of speculative steps, attention sparsity readouts. Old rows
// get the defaults: no prompt tokens kept, no speculation, keys from position 0, no bonus token.
constexpr const char* kMigrateV2ToV3 = R"sql(
ALTER TABLE runs ADD COLUMN prompt_ids BLOB NOT NULL DEFAULT x'';
ALTER TABLE runs ADD COLUMN prompt_pieces BLOB NOT NULL DEFAULT x'';
ALTER TABLE runs ADD COLUMN drafted_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN accepted_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE snapshots ADD COLUMN key_begin INTEGER NOT NULL DEFAULT 0;
ALTER TABLE spec_events ADD COLUMN bonus INTEGER NOT NULL DEFAULT -1;
ALTER TABLE spec_events ADD COLUMN draft_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE spec_events ADD COLUMN verify_ns INTEGER NOT NULL DEFAULT 0;
CREATE TABLE attention_stats(
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step INTEGER NOT NULL,
    t_ns INTEGER NOT NULL,
    n_layer INTEGER NOT NULL,
    n_head INTEGER NOT NULL,
    top_k INTEGER NOT NULL,
    threshold REAL NOT NULL,
    n_keys INTEGER NOT NULL,
    heads BLOB NOT NULL);
CREATE INDEX attention_stats_by_run ON attention_stats(run_id, id);
)sql";

// v4: the KV policy's evictions (KvEviction events). Positions are run-length blobs
// (blob_codec.h encode_positions), reasons one byte per kept position (KvKeepReason).
constexpr const char* kMigrateV3ToV4 = R"sql(
CREATE TABLE kv_evictions(
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    step INTEGER NOT NULL,
    t_ns INTEGER NOT NULL,
    policy TEXT NOT NULL,
    budget INTEGER NOT NULL,
    length_before INTEGER NOT NULL,
    ms REAL NOT NULL,
    evicted BLOB NOT NULL,
    kept BLOB NOT NULL,
    reasons BLOB NOT NULL);
CREATE INDEX kv_evictions_by_run ON kv_evictions(run_id, id);
)sql";

// v5: the prompt cache's telemetry per request: where the reused span came from, where the prompt
// diverged from what was cached, evicted entries, the cache's size after the request. Old rows:
// source unknown ("none"), no divergence recorded.
constexpr const char* kMigrateV4ToV5 = R"sql(
ALTER TABLE cache_events ADD COLUMN source TEXT NOT NULL DEFAULT 'none';
ALTER TABLE cache_events ADD COLUMN diverge_at INTEGER NOT NULL DEFAULT -1;
ALTER TABLE cache_events ADD COLUMN diverge_prompt_token INTEGER NOT NULL DEFAULT -1;
ALTER TABLE cache_events ADD COLUMN diverge_cached_token INTEGER NOT NULL DEFAULT -1;
ALTER TABLE cache_events ADD COLUMN diverge_cached_piece TEXT NOT NULL DEFAULT '';
ALTER TABLE cache_events ADD COLUMN evicted_entries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cache_events ADD COLUMN cache_entries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cache_events ADD COLUMN cache_tokens INTEGER NOT NULL DEFAULT 0;
)sql";

// v6: the reasoning split of each token (TokenEvent::split, reasoning, reasoning_text,
// answer_text) and of each run (its reasoning tokens and time), so a reopened conversation shows
// the model's thinking as a block, as it did live. Old rows: no split known (the text as
// generated).
constexpr const char* kMigrateV5ToV6 = R"sql(
ALTER TABLE tokens ADD COLUMN split INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tokens ADD COLUMN reasoning INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tokens ADD COLUMN reasoning_text TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN answer_text TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN reasoning_ns INTEGER NOT NULL DEFAULT 0;
)sql";

// v7: a mixture-of-experts step's routing (StepEvent::experts, blob_codec.h encode_experts), so a
// reopened run shows its expert load and each token's experts. Old rows and dense models: empty.
constexpr const char* kMigrateV6ToV7 = R"sql(
ALTER TABLE steps ADD COLUMN experts BLOB NOT NULL DEFAULT x'';
)sql";

// v8: measurements run from the window (app/measure/measurement.h): the kind ("ppl", "eval_kv",
// "bench_spec"), the model file, the parameters and the whole result as JSON (the format of the
// CLI's --json), how long it took. Not tied to a conversation.
constexpr const char* kMigrateV7ToV8 = R"sql(
CREATE TABLE measurements(
    id INTEGER PRIMARY KEY,
    created_at TEXT NOT NULL,
    kind TEXT NOT NULL,
    model_path TEXT NOT NULL,
    headline TEXT NOT NULL,
    params_json TEXT NOT NULL,
    result_json TEXT NOT NULL,
    seconds REAL NOT NULL);
)sql";

// v9: the prefix cache's radix tree as each request left it (PrefixCacheEvent::tree as JSON,
// store/prefix_tree_codec.h), so a reopened run draws it. Old rows: '' (not recorded).
constexpr const char* kMigrateV8ToV9 = R"sql(
ALTER TABLE cache_events ADD COLUMN tree TEXT NOT NULL DEFAULT '';
)sql";

// v10: a traced step's timeline (StepEvent::trace, blob_codec.h encode_trace): every backend call
// with its layer, bytes and FLOPs, and the worker threads' spans. Old rows and untraced steps: ''.
constexpr const char* kMigrateV9ToV10 = R"sql(
ALTER TABLE steps ADD COLUMN trace BLOB NOT NULL DEFAULT x'';
)sql";

// v11: runs of a window attached to a remote server (app/remote/remote_engine.h): the texts of
// each token's alternatives (their ids are the attachment's own numbering, not a vocabulary a
// reopened run could name them from), and the server's /metrics read around each run. Old rows
// and local runs: no texts (the vocabulary names the ids), no server loads.
constexpr const char* kMigrateV10ToV11 = R"sql(
ALTER TABLE tokens ADD COLUMN top_text BLOB NOT NULL DEFAULT x'';
CREATE TABLE server_loads(
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    t_ns INTEGER NOT NULL,
    names TEXT NOT NULL,
    running REAL NOT NULL,
    waiting REAL NOT NULL,
    kv_usage REAL NOT NULL,
    prefix_queries REAL NOT NULL,
    prefix_hits REAL NOT NULL,
    prompt_tokens REAL NOT NULL,
    generation_tokens REAL NOT NULL,
    spec_draft_tokens REAL NOT NULL,
    spec_accepted_tokens REAL NOT NULL);
CREATE INDEX server_loads_by_run ON server_loads(run_id, id);
)sql";

std::string where(const std::filesystem::path& p) {
    return "session database " + p.string();
}

// A non-empty file must start with SQLite's magic before SQLite is let near it.
void check_header(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw StoreError("cannot read " + where(path), SQLITE_CANTOPEN);
    std::array<char, 16> magic{};
    in.read(magic.data(), magic.size());
    const std::string_view got(magic.data(), size_t(in.gcount()));
    if (got != std::string_view("SQLite format 3\0", 16))
        throw StoreError(path.string() +
                             " is not a Fluoroscope session database (not an SQLite file); it "
                             "was left untouched",
                         SQLITE_NOTADB);
}

struct Identity {
    int64_t app_id = 0, version = 0, objects = 0;
};

// "file:" URI of a path, for SQLite's URI parameters.
std::string file_uri(const std::filesystem::path& path) {
    std::string uri = "file:";
    for (char ch : std::filesystem::absolute(path).string()) {
        if (ch == '%' || ch == '?' || ch == '#') {
            static const char* hex = "0123456789ABCDEF";
            uri += '%';
            uri += hex[uint8_t(ch) >> 4];
            uri += hex[uint8_t(ch) & 15];
        } else {
            uri += ch;
        }
    }
    return uri;
}

// Read-only look at a file that claims to be SQLite. Without a WAL beside it the file is opened
// immutable, so not even -wal/-shm companions appear next to a file that turns out not to be
// ours; with one (a session that was killed), the WAL must be read, so normally read-only.
Identity inspect(const std::filesystem::path& path) {
    try {
        const bool has_wal = std::filesystem::exists(path.string() + "-wal");
        Database ro(has_wal ? path : std::filesystem::path(file_uri(path) + "?immutable=1"),
                    SQLITE_OPEN_READONLY | (has_wal ? 0 : SQLITE_OPEN_URI));
        Identity id;
        id.app_id = ro.query_int("PRAGMA application_id");
        id.version = ro.query_int("PRAGMA user_version");
        id.objects = ro.query_int("SELECT count(*) FROM sqlite_master");
        if (id.objects > 0) {
            Statement check(ro, "PRAGMA quick_check(1)");
            if (!check.step() || check.text(0) != "ok")
                throw StoreError("integrity check: " + check.text(0), SQLITE_CORRUPT);
        }
        return id;
    } catch (const StoreError& e) {
        throw StoreError(path.string() + " is corrupt or not a database (" + e.what() +
                             "); it was left untouched",
                         e.code());
    }
}

void migrate(Database& db, int64_t from) {
    Transaction tx(db);
    if (from < 1) {
        db.exec(kSchemaV1);
        db.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
    }
    if (from < 2) db.exec(kMigrateV1ToV2);
    if (from < 3) db.exec(kMigrateV2ToV3);
    if (from < 4) db.exec(kMigrateV3ToV4);
    if (from < 5) db.exec(kMigrateV4ToV5);
    if (from < 6) db.exec(kMigrateV5ToV6);
    if (from < 7) db.exec(kMigrateV6ToV7);
    if (from < 8) db.exec(kMigrateV7ToV8);
    if (from < 9) db.exec(kMigrateV8ToV9);
    if (from < 10) db.exec(kMigrateV9ToV10);
    if (from < 11) db.exec(kMigrateV10ToV11);
    db.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
    tx.commit();
}

}  // namespace

const char* schema_v1_sql() {
    return kSchemaV1;
}

const char* migrate_v1_to_v2_sql() {
    return kMigrateV1ToV2;
}

const char* migrate_v2_to_v3_sql() {
    return kMigrateV2ToV3;
}

std::unique_ptr<Database> open_session_db(const std::filesystem::path& path) {
    std::error_code ec;
    const bool exists = std::filesystem::exists(path, ec);
    Identity id;
    if (exists && std::filesystem::file_size(path, ec) > 0 && !ec) {
        check_header(path);
        id = inspect(path);
        if (id.app_id != kApplicationId && (id.app_id != 0 || id.objects > 0))
            throw StoreError(path.string() +
                                 " is an SQLite database but not a Fluoroscope session database; "
                                 "it was left untouched",
                             SQLITE_NOTADB);
        if (id.version > kSchemaVersion)
            throw StoreError(path.string() +
                                 " was written by a newer Fluoroscope (schema version " +
                                 std::to_string(id.version) + "; this build reads up to " +
                                 std::to_string(kSchemaVersion) + "); it was left untouched",
                             SQLITE_CANTOPEN);
    } else if (!exists && path.has_parent_path()) {
        std::filesystem::create_directories(path.parent_path(), ec);
        if (ec)
            throw StoreError("cannot create the directory " + path.parent_path().string() +
                                 " for the " + where(path) + ": " + ec.message(),
                             SQLITE_CANTOPEN);
    }
    auto db = std::make_unique<Database>(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    db->exec("PRAGMA journal_mode = WAL");
    db->exec("PRAGMA synchronous = NORMAL");  // WAL: a commit survives a process kill
    db->exec("PRAGMA foreign_keys = ON");
    if (id.version < kSchemaVersion) migrate(*db, id.version);
    return db;
}

}  // namespace fluoro::app
