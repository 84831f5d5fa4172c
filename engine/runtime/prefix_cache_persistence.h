// The engine's prefix cache across restarts (kv/prefix_cache_file.h): restored right after a model
// loads when the file's key matches — the model file's SHA-256, the KV type, the RoPE settings and
// the backend — and saved after runs that changed it (at most once per interval) and when the
// model unloads, the live conversation included. A file that cannot be used is reported and left
// alone; the cache then starts empty.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kv/kv_cache.h"
#include "kv/prefix_cache_file.h"

namespace fluoro {

class Model;
class PrefixCache;

// The key of a model's cache; hashes the model file (reads it whole once, ~0.2 s per 240 MiB).
PrefixCacheKey prefix_cache_key(const Model& model, const std::filesystem::path& model_path,
                                KvTypes kv_type, std::string_view backend);

class PrefixCachePersistence {
  public:
    PrefixCachePersistence(std::filesystem::path file, PrefixCacheKey key,
                           std::chrono::milliseconds interval);

    const std::filesystem::path& file() const { return file_; }

    // Restores the file into the (empty) cache. Never throws: `note` is the line to show, e.g.
    // "restored 3 entries (4512 tokens) from F in 41 ms" or "ignored, starting empty: ...
    // foreign cache (...)"; empty when there is no file yet.
    struct Restored {
        std::string note;
        PrefixCacheFileStats stats;  // zero unless restored
    };
    Restored restore(PrefixCache& cache, int64_t scratch_seq);

    // Saves the cache and the live prefix when they changed since the last save and (unless
    // force) the interval has passed. Returns what was written, nullopt when nothing was due.
    // Throws Error when the file cannot be written.
    std::optional<PrefixCacheFileStats> save_if_due(const PrefixCache& cache,
                                                    std::span<const int32_t> live_tokens,
                                                    int64_t live_seq, bool force);

  private:
    std::filesystem::path file_;
    PrefixCacheKey key_;
    std::chrono::milliseconds interval_;
    std::chrono::steady_clock::time_point last_save_{};
    int64_t saved_stored_ = 0, saved_evictions_ = 0;  // the cache's counters at the last save
    std::vector<int32_t> saved_live_;
};

}  // namespace fluoro
