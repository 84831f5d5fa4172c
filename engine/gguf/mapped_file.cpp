#include "gguf/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"

namespace fluoro::gguf {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
    throw Error(path.string() + ": " + what);
}

std::string errno_text() {
    return std::strerror(errno);
}

// Closes the descriptor on every path out of the constructor; the mapping outlives it.
struct FdGuard {
    int fd;
    ~FdGuard() {
        if (fd >= 0) ::close(fd);
    }
};

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
    // O_NONBLOCK: opening a FIFO must not hang before fstat can reject it.
    FdGuard guard{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
    if (guard.fd < 0) fail(path, "cannot open: " + errno_text() + "; expected a readable file");
    struct stat st {};
    if (::fstat(guard.fd, &st) != 0) fail(path, "cannot stat: " + errno_text());
    if (S_ISDIR(st.st_mode)) fail(path, "is a directory; expected a GGUF file");
    if (!S_ISREG(st.st_mode)) fail(path, "is not a regular file; expected a GGUF file");
    size_ = static_cast<size_t>(st.st_size);
    dev_ = st.st_dev;
    ino_ = st.st_ino;
    mtime_ns_ = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
    if (size_ == 0) return;
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, guard.fd, 0);
    if (p == MAP_FAILED)
        fail(path, "cannot map " + std::to_string(size_) + " bytes: " + errno_text());
    data_ = static_cast<const std::byte*>(p);
}

MappedFile::DiskState MappedFile::disk_state() const {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) return DiskState::Replaced;  // deleted: our inode lives on
    if (st.st_dev != dev_ || st.st_ino != ino_) return DiskState::Replaced;
    const long long mtime =
        static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
    if (static_cast<size_t>(st.st_size) != size_ || mtime != mtime_ns_)
        return DiskState::ModifiedInPlace;
    return DiskState::Unchanged;
}

void MappedFile::drop_pages(std::span<const std::byte> range) const noexcept {
    const auto begin = reinterpret_cast<uintptr_t>(range.data());
    const auto end = begin + range.size();
    const auto map_begin = reinterpret_cast<uintptr_t>(data_);
    if (!data_ || begin < map_begin || end > map_begin + size_ || end < begin) return;
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
    // Whole pages only: a page shared with a neighbouring tensor stays. MAP_PRIVATE and never
    // written, so the dropped pages are re-read from the file if touched again.
    if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace fluoro::gguf
