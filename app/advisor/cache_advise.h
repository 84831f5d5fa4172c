// `fluoro cache advise` minus the command line: open the session database, take one model's
// recorded requests, run the prompt-order advisor and render its report. The CLI prints what this
// returns, and the tests call it on a database they wrote.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace fluoro::app {

struct CacheAdviseOptions {
    std::filesystem::path db;  // the session database (must exist)
    int64_t last = 0;          // > 0: the latest N requests only
    std::string model;         // substring of the model's path or name
    bool json = false;
};

// The report (text, or JSON with a trailing newline). Throws Error for a missing database,
// StoreError for one that is corrupt or not ours.
std::string cache_advise_report(const CacheAdviseOptions& opt);

}  // namespace fluoro::app
