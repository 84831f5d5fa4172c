// Whole K/V rows of a cache for tests, in token-major order (a slot's heads side by side)
// whatever the cache's layout (KvShape::head_major): what a test writes or compares.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kv/kv_cache.h"

namespace fluoro::test {

inline std::vector<std::byte> k_bytes(const KvCache& kv, int64_t layer, int64_t seq, int64_t pos) {
    std::vector<std::byte> row(kv.shape().k_row_bytes(layer));
    kv.read_k(layer, seq, pos, row.data());
    return row;
}

inline std::vector<std::byte> v_bytes(const KvCache& kv, int64_t layer, int64_t seq, int64_t pos) {
    std::vector<std::byte> row(kv.shape().v_row_bytes(layer));
    kv.read_v(layer, seq, pos, row.data());
    return row;
}

}  // namespace fluoro::test
