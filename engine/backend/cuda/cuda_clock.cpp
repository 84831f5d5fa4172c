#include "backend/cuda/cuda_clock.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "backend/cuda/cuda_check.h"

namespace fluoro::cuda {

CudaClock::~CudaClock() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

int32_t CudaClock::mark() {
    if (size_t(used_) == events_.size()) {
        events_.reserve(events_.size() + 1);  // push_back cannot throw after the create
        cudaEvent_t e = nullptr;
        FLUORO_CUDA_CHECK(cudaEventCreate(&e));
        events_.push_back(e);
    }
    FLUORO_CUDA_CHECK(cudaEventRecord(events_[size_t(used_)], stream_));
    return used_++;
}

void CudaClock::elapsed_ns(std::span<int64_t> ns) {
    if (ns.size() != size_t(used_))
        throw Error("cuda clock: " + std::to_string(ns.size()) + " times asked for " +
                    std::to_string(used_) + " marks");
    if (used_ == 0) return;
    FLUORO_CUDA_CHECK(cudaEventSynchronize(events_[size_t(used_) - 1]));
    ns[0] = 0;
    for (size_t i = 1; i < size_t(used_); ++i) {
        float ms = 0;
        FLUORO_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[0], events_[i]));
        // Marks are in stream order, so their times never decrease; the float's rounding could
        // still give a later mark a hair less than the one before: keep them ordered.
        ns[i] = std::max(ns[i - 1], int64_t(std::llround(double(ms) * 1e6)));
    }
}

}  // namespace fluoro::cuda
