// The GGUF tensor directory: reading each entry (name, shape, type, offset) with its checks,
// then checking that every tensor's data lies inside the file and that no two overlap.
// Part of the GgufFile parser; not a public API.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gguf/byte_cursor.h"
#include "gguf/gguf_file.h"

namespace fluoro::gguf {

constexpr uint64_t kMaxTensorNameBytes = 256;

// Where a tensor's fields sit in the file, for error messages found after the directory.
struct TensorPlace {
    uint64_t name_at = 0;
    uint64_t offset_at = 0;
};

struct TensorDirectory {
    std::vector<TensorInfo> tensors;
    std::vector<TensorPlace> places;                   // parallel to tensors
    std::map<std::string, size_t, std::less<>> index;  // name -> position
};

// Reads `n` entries (n already checked against the bytes left); offsets must be multiples of
// `alignment`. The cursor ends after the last entry.
TensorDirectory read_tensor_directory(ByteCursor& c, uint64_t n, uint64_t alignment);

// Checks data_offset + offset + n_bytes <= file size (overflow-safe) for every tensor and that
// no two tensors' data ranges overlap.
void check_tensor_data(const ByteCursor& c, const TensorDirectory& dir, uint64_t data_offset);

}  // namespace fluoro::gguf
