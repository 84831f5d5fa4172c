// Shared by the CUDA tests: a fixture base that skips a test when no usable GPU is present (CI has
// the toolkit but no GPU) and fails it instead when FLUORO_REQUIRE_CUDA=1 (scripts/gpu-check.sh
// sets it, so a GPU run can't pass by skipping everything).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

#include "backend/cuda/device.h"

namespace fluoro::cuda::test {

inline const DeviceStatus& device_status() {
    static const DeviceStatus status = probe_devices();
    return status;
}

inline bool cuda_required() {
    const char* value = std::getenv("FLUORO_REQUIRE_CUDA");
    return value != nullptr && std::string_view(value) == "1";
}

template <class Base = ::testing::Test>
class CudaTest : public Base {
  protected:
    void SetUp() override {
        const DeviceStatus& status = device_status();
        if (status.available) return;
        if (cuda_required())
            FAIL() << "FLUORO_REQUIRE_CUDA=1 but no CUDA device: " << status.reason;
        GTEST_SKIP() << "no CUDA device: " << status.reason;
    }
};

}  // namespace fluoro::cuda::test
