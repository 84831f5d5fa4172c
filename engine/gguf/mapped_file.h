// A read-only memory mapping of a whole file (RAII). GgufFile maps model files instead of
// reading them so that multi-gigabyte weights cost no copy and no heap; the mapping lives as
// long as the MappedFile.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>

namespace fluoro::gguf {

class MappedFile {
  public:
    // Maps `path` read-only. Throws fluoro::Error naming the path when it is missing, is not a
    // regular file (a directory, a FIFO), or cannot be opened or mapped. An empty file maps to
    // an empty span (the caller decides whether that is an error).
    explicit MappedFile(const std::filesystem::path& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    std::span<const std::byte> bytes() const { return {data_, size_}; }

  private:
    const std::byte* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace fluoro::gguf
