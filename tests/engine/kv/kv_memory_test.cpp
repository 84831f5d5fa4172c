// The host KV memory is touched when it is allocated (kv/kv_memory.cpp says why: otherwise the
// first prefill paid the page faults): every page of a fresh allocation is resident (mincore)
// and reads zero when allocate() returns.
#include "kv/kv_memory.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace fluoro {
namespace {

TEST(HostKvMemory, AllocationsArePrefaultedAsZeros) {
    const auto mem = host_kv_memory();
    constexpr size_t kBytes = (9u << 20) + 123;  // several 2 MiB pages, not a multiple
    std::byte* p = mem->allocate(kBytes);
    ASSERT_NE(p, nullptr);
    const auto page = size_t(sysconf(_SC_PAGESIZE));
    auto* first = reinterpret_cast<std::byte*>(reinterpret_cast<uintptr_t>(p) / page * page);
    const size_t span = size_t(p + kBytes - first);
    std::vector<unsigned char> resident((span + page - 1) / page);
    ASSERT_EQ(mincore(first, span, resident.data()), 0);
    const auto missing =
        std::count_if(resident.begin(), resident.end(), [](unsigned char r) { return !(r & 1); });
    EXPECT_EQ(missing, 0) << missing << " of " << resident.size() << " pages not resident";
    EXPECT_TRUE(std::all_of(p, p + kBytes, [](std::byte b) { return b == std::byte{0}; }));
    mem->release(p);
}

}  // namespace
}  // namespace fluoro
