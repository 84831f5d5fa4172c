// The session store: conversations, messages, runs and everything recorded during a run, in one
// SQLite file (schema.h). Synchronous and single-threaded — one Store per thread; the recording
// path goes through StoreWriter, which owns one on its own thread. Every failure throws
// StoreError naming the file.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/records.h"
#include "store/sqlite_db.h"

namespace fluoro::app {

class Store {
  public:
    explicit Store(const std::filesystem::path& path);  // open_session_db
    ~Store();
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;

    Database& db() { return *db_; }
    const std::filesystem::path& path() const { return db_->path(); }

    // --- writing (callers group them in a Transaction) ---
    int64_t add_conversation(const std::string& title, const std::string& system_prompt,
                             const std::string& created_at);
    int64_t add_message(int64_t conversation, std::optional<int64_t> parent,
                        const std::string& role, const std::string& content, bool complete,
                        const std::string& created_at);
    void update_message(int64_t id, const std::string& content, bool complete);
    // Inserts the run's header fields (everything up to prompt_tokens, and the prompt's ids and
    // pieces); returns its id.
    int64_t add_run(const RunRecord& run);
    // Writes the result fields (stop_reason onwards, drafted/accepted tokens included).
    void finish_run(int64_t id, const RunRecord& run);
    // with_top_text: keep the alternatives' texts too (a remote run's: its ids name no
    // vocabulary).
    void add_token(int64_t run, const TokenEvent& t, bool with_top_text = false);
    void add_server_load(int64_t run, const ServerLoadEvent& l);
    void add_step(int64_t run, const StepEvent& s);
    void add_cache_event(int64_t run, const PrefixCacheEvent& c);
    void add_memory(int64_t run, const MemoryCounters& m);
    void add_spec_step(int64_t run, const SpecStep& s);
    void add_kv_snapshot(int64_t run, const KvSnapshot& s);
    void add_attention_snapshot(int64_t run, const AttentionSnapshot& s);
    void add_attention_stats(int64_t run, const AttentionStats& s);
    void add_kv_eviction(int64_t run, const KvEviction& e);
    // A whole conversation (from an import) under new ids, in one transaction; returns its id.
    int64_t insert_conversation(const ConversationRecord& c);

    // --- reading ---
    std::vector<ConversationSummary> list_conversations();
    // Throws StoreError when there is no such conversation / run.
    ConversationRecord load_conversation(int64_t id);
    RunRecord load_run(int64_t id);
    int64_t conversation_of_run(int64_t run);
    void delete_conversation(int64_t id);
    // Throws StoreError when there is no such conversation.
    void rename_conversation(int64_t id, const std::string& title);
    // Conversations whose title or any message contains `text` (case-insensitive for ASCII),
    // newest id last like list_conversations; an empty text lists them all.
    std::vector<ConversationSummary> search_conversations(const std::string& text);

    // sha256 of a model file, cached by (path, size, mtime).
    std::optional<std::string> cached_hash(const std::string& path, int64_t size, int64_t mtime);
    void cache_hash(const std::string& path, int64_t size, int64_t mtime, const std::string& hex);

  private:
    void load_run_details(RunRecord& r);  // errors name the file and the run
    void load_run_rows(RunRecord& r);
    void load_kv_evictions(RunRecord& r);

    std::unique_ptr<Database> db_;
    struct Prepared;  // statements reused on the hot path
    std::unique_ptr<Prepared> st_;
};

}  // namespace fluoro::app
