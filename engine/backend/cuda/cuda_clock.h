// The CUDA backend's device clock (backend/device_clock.h): CUDA events recorded on its stream.
// mark() records the next event of a pool that grows to the most marks one read ever needed
// (about two per op of a step) and is reused after each reset; elapsed_ns() waits for the last
// event and reads every event's time since the first (cudaEventElapsedTime: about half a
// microsecond of resolution).
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "backend/device_clock.h"

namespace fluoro::cuda {

class CudaClock final : public DeviceClock {
  public:
    explicit CudaClock(cudaStream_t stream) : stream_(stream) {}
    ~CudaClock() override;
    CudaClock(const CudaClock&) = delete;
    CudaClock& operator=(const CudaClock&) = delete;

    int32_t mark() override;
    int32_t marks() const override { return used_; }
    void elapsed_ns(std::span<int64_t> ns) override;
    void reset() override { used_ = 0; }

  private:
    cudaStream_t stream_;
    std::vector<cudaEvent_t> events_;
    int32_t used_ = 0;
};

}  // namespace fluoro::cuda
