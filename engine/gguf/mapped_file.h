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

    // Whether the file behind the mapping changed since it was mapped. Modified or truncated in
    // place: the mapping may now read other bytes, or fault past the new end — not safe to use.
    // Replaced (the path names a new file, e.g. after a download finished with a rename): the
    // mapping still holds the old file and stays valid.
    enum class DiskState { Unchanged, Replaced, ModifiedInPlace };
    DiskState disk_state() const;
    const std::filesystem::path& path() const { return path_; }

    // Tells the kernel this process will not read `range` (inside bytes()) again soon: its whole
    // pages leave the process's resident memory (they stay in the page cache, and reading them
    // again faults them back in from the file, so nothing is lost). For bytes a caller has copied
    // elsewhere. A range outside the mapping is ignored.
    void drop_pages(std::span<const std::byte> range) const noexcept;

  private:
    std::filesystem::path path_;
    unsigned long long dev_ = 0, ino_ = 0;
    long long mtime_ns_ = 0;
    const std::byte* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace fluoro::gguf
