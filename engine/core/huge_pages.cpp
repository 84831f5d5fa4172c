#include "core/huge_pages.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace fluoro {

std::byte* alloc_huge(size_t bytes) {
    if (bytes > SIZE_MAX - kHugePageBytes) return nullptr;  // rounded up it would wrap
    const size_t size =
        (std::max<size_t>(bytes, 1) + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    void* p = std::aligned_alloc(kHugePageBytes, size);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p) madvise(p, size, MADV_HUGEPAGE);  // a hint: refused, the pages stay small
#endif
    return static_cast<std::byte*>(p);
}

void free_huge(std::byte* p) noexcept {
    std::free(p);
}

}  // namespace fluoro
