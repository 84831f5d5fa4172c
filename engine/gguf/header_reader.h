// The fixed GGUF header: magic, version, tensor and metadata counts. Versions 2 and 3
// little-endian are accepted; v1, big-endian files and future versions get specific messages.
// Part of the GgufFile parser; not a public API.
#pragma once

#include <cstdint>

#include "gguf/byte_cursor.h"

namespace fluoro::gguf {

struct Header {
    uint32_t version = 0;
    uint64_t n_tensors = 0;
    uint64_t n_tensors_at = 0;  // byte offset of the count, for error messages
    uint64_t n_kv = 0;
};

// Smallest on-disk sizes of one metadata pair (8-byte key length, a 1-byte key, 4-byte type,
// a 1-byte value) and one tensor entry (8-byte name length, a 1-byte name, n_dims, one
// dimension, type, offset): a count from the file is checked against them before anything is
// reserved.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
constexpr uint64_t kMinTensorEntryBytes = 8 + 1 + 4 + 8 + 4 + 8;

// Reads and checks the header; the cursor ends at the first metadata pair.
Header read_header(ByteCursor& c);

}  // namespace fluoro::gguf
