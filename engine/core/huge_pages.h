// Memory in 2 MiB pages where Linux grants them: transparent huge pages on request (madvise), the
// default "madvise" mode. Buffers a step streams through whole — the KV cache, the interleaved
// weights — otherwise take a TLB miss every 4 KiB, and in a VM each miss walks two page tables.
// With the interleaved weights in 2 MiB pages, decode ran 12 % (SmolLM2) and 20 % (Gemma 3)
// faster on the Xeon host (docs/PERFORMANCE.md). Elsewhere, or when the kernel refuses, the pages
// simply stay small.
#pragma once

#include <cstddef>

namespace fluoro {

inline constexpr size_t kHugePageBytes = size_t(2) << 20;

// At least `bytes` bytes (rounded up to whole huge pages), aligned to kHugePageBytes; nullptr when
// the memory cannot be had. Release with free_huge().
std::byte* alloc_huge(size_t bytes);
void free_huge(std::byte* p) noexcept;

}  // namespace fluoro
