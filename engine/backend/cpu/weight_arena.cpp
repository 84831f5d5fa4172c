#include "backend/cpu/weight_arena.h"

#include <algorithm>

#include "core/huge_pages.h"

namespace fluoro::cpu {
namespace {

constexpr size_t kAlign = 64;

}  // namespace

void WeightArena::Free::operator()(std::byte* p) const noexcept {
    free_huge(p);
}

std::byte* WeightArena::allocate(size_t bytes) {
    const size_t need = (bytes + kAlign - 1) / kAlign * kAlign;
    if (need < bytes) return nullptr;  // wrapped
    if (chunks_.empty() || capacity_ - used_ < need) {
        const size_t size = std::max(need, kChunkBytes);
        std::byte* chunk = alloc_huge(size);
        if (!chunk) return nullptr;
        chunks_.emplace_back(chunk);
        used_ = 0;
        capacity_ = size;
    }
    std::byte* p = chunks_.back().get() + used_;
    used_ += need;
    return p;
}

}  // namespace fluoro::cpu
