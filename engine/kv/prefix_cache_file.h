// The prefix cache across restarts: its entries (token ids and their K/V rows) saved to one file
// and restored into an empty cache at the next start. Nothing in the file is trusted: a file
// whose key differs (another model file, KV type, RoPE setting or backend), a wrong version, a
// truncated or corrupt one (CRC-32 over the header and over the body), or values that do not fit
// the cache (token ids, lengths) is refused with an Error naming what and where, before the cache
// is touched.
//
// Layout (little-endian):
//   "FLUOROPC"  u32 version  u32 key_bytes  key text ("name=value\n" lines)  u32 crc32(key)
//   u64 body_bytes  u32 crc32(body)  body
//   body: u32 n_entries, then per entry (least recently used first):
//     u32 parent (an earlier entry, 0xFFFFFFFF: none)  u32 shared  u32 n_tokens
//     i32 tokens[n_tokens]
//     per layer: K rows of positions [shared, n_tokens), then V rows, in the cache's KV type
//   An entry's first `shared` tokens (and their rows) are its parent's: a system prompt that
//   twenty conversations start with is stored once.
// Saving writes a temporary file beside the target, flushes it to disk and renames it over the
// target: a crash leaves the old file or the new one, never half of one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace fluoro {

class PrefixCache;

inline constexpr uint32_t kPrefixCacheFileVersion = 1;

// What makes a cached K/V row valid for a cache: (name, value) pairs, equal on save and restore.
struct PrefixCacheKey {
    std::vector<std::pair<std::string, std::string>> fields;
    std::string text() const;  // "name=value\n" per field
};

struct PrefixCacheFileStats {
    int64_t entries = 0;  // entries written / restored
    int64_t tokens = 0;   // their tokens (shared ones counted per entry)
    int64_t rows = 0;     // token rows in the file (shared prefixes once)
    int64_t skipped = 0;  // restore: entries that did not fit the cache now
    uint64_t file_bytes = 0;
    double ms = 0;
};

// A prefix held outside the cache's slots (the live conversation): saved as one more entry.
struct PrefixCacheExtra {
    std::span<const int32_t> tokens;  // held by sequence seq of the cache's KV, slots [0, n)
    int64_t seq = 0;
};

// Writes every entry of `cache` (least recently used first), then `extra`. Throws Error when the
// file cannot be written (the old file, if any, is left as it was).
PrefixCacheFileStats save_prefix_cache(const PrefixCache& cache, const PrefixCacheKey& key,
                                       const std::filesystem::path& path,
                                       std::span<const PrefixCacheExtra> extra = {});

// Fills `cache` from the file. `scratch_seq` is an empty sequence of the cache's KV, outside the
// cache's slots, used to assemble each entry (left empty on return). Entries that no longer fit
// (fewer slots or a smaller pool than when saved) are skipped, oldest first. Throws Error naming
// the problem when the file is foreign, corrupt or truncated; the cache is untouched then.
PrefixCacheFileStats restore_prefix_cache(PrefixCache& cache, int64_t scratch_seq,
                                          const PrefixCacheKey& key,
                                          const std::filesystem::path& path);

}  // namespace fluoro
