// Huge-page allocations: aligned to 2 MiB, writable, sizes that would wrap refused with nullptr.
// (Whether the kernel grants 2 MiB pages is its choice; the code works either way.)
#include "core/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace fluoro {
namespace {

TEST(HugePages, AllocationsAreHugePageAlignedAndWritable) {
    for (const size_t bytes : {size_t(1), size_t(4096), kHugePageBytes + 1}) {
        std::byte* p = alloc_huge(bytes);
        ASSERT_NE(p, nullptr) << bytes;
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePageBytes, 0u) << bytes;
        std::memset(p, 0x5a, bytes);
        EXPECT_EQ(p[bytes - 1], std::byte{0x5a});
        free_huge(p);
    }
    EXPECT_EQ(alloc_huge(SIZE_MAX - 1), nullptr);  // rounding up would wrap: refused, no throw
}

}  // namespace
}  // namespace fluoro
