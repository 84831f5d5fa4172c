// The arena the CPU backend copies interleaved weights into: 64-byte aligned blocks that never
// overlap, in chunks of huge pages, a block larger than a chunk on its own.
#include "backend/cpu/weight_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace fluoro::cpu {
namespace {

TEST(WeightArena, BlocksAreAlignedDisjointAndKeepTheirBytes) {
    WeightArena arena;
    // Small matrices share chunks; the 40 MiB one is larger than a chunk.
    const std::vector<size_t> sizes{207360, 69120, 1, 64, 65, size_t(40) << 20, 884736, 3};
    std::vector<std::pair<std::byte*, size_t>> blocks;
    for (size_t i = 0; i < sizes.size(); ++i) {
        std::byte* p = arena.allocate(sizes[i]);
        ASSERT_NE(p, nullptr) << sizes[i];
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << sizes[i];
        std::memset(p, int(i + 1), sizes[i]);
        blocks.emplace_back(p, sizes[i]);
    }
    for (size_t i = 0; i < blocks.size(); ++i) {
        const auto [p, n] = blocks[i];
        for (size_t j = 0; j < blocks.size(); ++j) {
            if (i == j) continue;
            const auto [q, m] = blocks[j];
            EXPECT_TRUE(p + n <= q || q + m <= p) << i << " overlaps " << j;
        }
        // Every byte still holds what its block's writer put there.
        for (const size_t at : {size_t(0), n / 2, n - 1})
            EXPECT_EQ(p[at], std::byte(i + 1)) << "block " << i << " byte " << at;
    }
}

TEST(WeightArena, ImpossibleSizesGiveNull) {
    WeightArena arena;
    EXPECT_EQ(arena.allocate(SIZE_MAX - 10), nullptr);
    EXPECT_NE(arena.allocate(128), nullptr);  // and the arena still works after a refusal
}

}  // namespace
}  // namespace fluoro::cpu
