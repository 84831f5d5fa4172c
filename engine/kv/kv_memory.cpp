#include "kv/kv_memory.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace fluoro {
namespace {

class HostKvMemory final : public KvMemory {
  public:
    std::string_view name() const override { return "host"; }
    bool host_visible() const override { return true; }
    // In 2 MiB pages where the kernel grants them (transparent huge pages on request, the
    // default "madvise" mode): a decode step reads every layer's rows, one head's slice at a
    // time, and with 4 KiB pages each page holds only ~10 rows of a small model's cache.
    std::byte* allocate(size_t bytes) override {
        constexpr size_t kHuge = size_t(2) << 20;
        if (bytes > SIZE_MAX - kHuge) return nullptr;  // rounded up it would wrap
        const size_t size = (std::max<size_t>(bytes, 1) + kHuge - 1) / kHuge * kHuge;
        void* p = std::aligned_alloc(kHuge, size);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        if (p) madvise(p, size, MADV_HUGEPAGE);  // a hint: refused, the pages stay small
#endif
        return static_cast<std::byte*>(p);
    }
    void release(std::byte* p) noexcept override {
        std::free(p);
    }
    void move(std::byte* dst, const std::byte* src, size_t bytes) override {
        std::memmove(dst, src, bytes);
    }
    void to_host(void* dst, const std::byte* src, size_t bytes) override {
        if (bytes > 0) std::memcpy(dst, src, bytes);
    }
    void from_host(std::byte* dst, const void* src, size_t bytes) override {
        if (bytes > 0) std::memcpy(dst, src, bytes);
    }
};

}  // namespace

std::shared_ptr<KvMemory> host_kv_memory() {
    static const std::shared_ptr<KvMemory> memory = std::make_shared<HostKvMemory>();
    return memory;
}

}  // namespace fluoro
