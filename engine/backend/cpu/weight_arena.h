// Where the CPU backend keeps the weights it rewrites at load (interleaved row groups): chunks of
// 2 MiB pages (core/huge_pages.h) handed out 64-byte aligned, one after another. One allocation
// per matrix in small pages cost a TLB miss every 4 KiB of every step's weight stream; a huge page
// per matrix would round SmolLM2's 202 KiB matrices up to 2 MiB each. Pages of a chunk that no
// matrix reached are never touched, so they take no memory.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace fluoro::cpu {

class WeightArena {
  public:
    // `bytes` bytes, 64-byte aligned, valid as long as the arena; nullptr when the memory cannot
    // be had.
    std::byte* allocate(size_t bytes);

  private:
    struct Free {
        void operator()(std::byte* p) const noexcept;
    };
    // Chunks take this much unless one matrix needs more (Gemma 3's 170 MiB head).
    static constexpr size_t kChunkBytes = size_t(32) << 20;
    std::vector<std::unique_ptr<std::byte[], Free>> chunks_;
    size_t used_ = 0, capacity_ = 0;  // of the last chunk
};

}  // namespace fluoro::cpu
