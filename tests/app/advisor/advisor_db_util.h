// Session databases for the advisor tests: stored runs written the way `fluoro serve --save`
// records stateless requests (one conversation per run), with prompts from the WordTokenizer.
// No GoogleTest here: the Qt Test suites use it too.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "advisor_test_util.h"  // same folder: also reachable from the Qt Test suites
#include "store/store.h"

namespace fluoro::app::test {

struct RunSpec {
    std::string model_path;
    std::string prompt;
    int64_t served_cached = 0;
};

// One conversation per run, as `fluoro serve --save` records stateless requests.
inline void write_runs(const std::filesystem::path& db, const std::vector<RunSpec>& runs) {
    WordTokenizer tok;
    Store store(db);
    Transaction tx(store.db());
    for (size_t i = 0; i < runs.size(); ++i) {
        const std::string at = "2024-05-01T12:00:" + std::to_string(10 + i) + "Z";
        const int64_t c = store.add_conversation("request " + std::to_string(i), "", at);
        const int64_t user = store.add_message(c, std::nullopt, "user", "q", true, at);
        const int64_t reply = store.add_message(c, user, "assistant", "a", true, at);
        const AdvisorRequest req = tok.request("", runs[i].prompt);
        RunRecord r;
        r.message_id = reply;
        r.kind = "send";
        r.model_path = runs[i].model_path;
        r.model_name = "Test";
        r.settings_json = r.hardware_json = "{}";
        r.program_version = "test";
        r.telemetry_level = "full";
        r.started_at = at;
        r.prompt_tokens = int64_t(req.ids.size());
        r.prompt_ids = req.ids;
        r.prompt_pieces = req.pieces;
        const int64_t id = store.add_run(r);
        r.stop_reason = "eog";
        r.cached_tokens = runs[i].served_cached;
        store.finish_run(id, r);
    }
    tx.commit();
}

inline std::string timestamped(size_t i) {
    return chatml("Now: 2024-05-01 09:1" + std::to_string(i) +
                      ":00\nYou are a helpful assistant.\n" + instructions(),
                  questions()[i]);
}

// Five requests on small.gguf whose system prompt starts with a changing timestamp, and an
// older one on other.gguf, written into `db`.
inline void write_timestamp_runs(const std::filesystem::path& db) {
    std::vector<RunSpec> runs;
    for (size_t i = 0; i < 5; ++i) runs.push_back({"/models/small.gguf", timestamped(i), 2});
    runs.push_back({"/models/other.gguf", timestamped(0), 0});  // another model, older
    std::rotate(runs.begin(), runs.end() - 1, runs.end());
    write_runs(db, runs);
}

}  // namespace fluoro::app::test
