// Where a paged KV cache's rows live: host memory for the CPU backend, device memory for CUDA.
// The cache (kv/paged_kv.h) keeps its bookkeeping (block tables, reference counts) on the host
// either way and touches row bytes only through this interface: one allocation up front, and
// moves of row ranges for copy-on-write and compaction. Readers get row addresses in the
// memory's own space (a CUDA backend's kernels read device addresses).
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

namespace fluoro {

class KvMemory {
  public:
    virtual ~KvMemory() = default;
    virtual std::string_view name() const = 0;  // "host", "cuda" (for errors)
    // False when the bytes cannot be read by the host (device memory).
    virtual bool host_visible() const = 0;
    // `bytes` bytes, or nullptr when they cannot be had (the cache then throws its Error naming
    // the MiB). Released with release().
    virtual std::byte* allocate(size_t bytes) = 0;
    virtual void release(std::byte* p) noexcept = 0;
    // memmove semantics: the ranges may overlap.
    virtual void move(std::byte* dst, const std::byte* src, size_t bytes) = 0;
    // Copies between the memory and the host (saving and restoring cached prefixes); synchronous:
    // on return the bytes are in place.
    virtual void to_host(void* dst, const std::byte* src, size_t bytes) = 0;
    virtual void from_host(std::byte* dst, const void* src, size_t bytes) = 0;
};

// Plain host memory (operator new / memmove).
std::shared_ptr<KvMemory> host_kv_memory();

}  // namespace fluoro
