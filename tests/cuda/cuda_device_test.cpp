// probe_devices() runs everywhere: on CI (no GPU) it must report why, not throw.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "backend/cuda/device.h"
#include "backend/cuda/device_buffer.h"
#include "cuda_test_support.h"

namespace fluoro::cuda {
namespace {

TEST(CudaDeviceTest, ProbeNeverThrowsAndExplainsUnavailability) {
    DeviceStatus status;
    ASSERT_NO_THROW(status = probe_devices());
    if (status.available) {
        EXPECT_TRUE(status.reason.empty()) << status.reason;
        EXPECT_GT(status.device_count, 0);
        EXPECT_FALSE(status.name.empty());
        EXPECT_GE(status.cc_major, 9);  // the build has sm_90 code only
        EXPECT_GT(status.total_mem, 0u);
        RecordProperty("cuda_device", status.name);
    } else {
        EXPECT_FALSE(status.reason.empty());
        RecordProperty("cuda_unavailable", status.reason);
    }
    // A second probe agrees: the first left no error state behind.
    const DeviceStatus again = probe_devices();
    EXPECT_EQ(again.available, status.available);
    EXPECT_EQ(again.reason, status.reason);
}

TEST(CudaDeviceTest, EmptyDeviceBufferNeedsNoDevice) {
    DeviceBuffer<float> empty(0);
    EXPECT_EQ(empty.data(), nullptr);
    EXPECT_EQ(empty.bytes(), 0u);
    EXPECT_NO_THROW(empty.copy_from_host({}));
    float one = 0.0f;
    EXPECT_THROW(empty.copy_to_host({&one, 1}), Error);
}

using CudaDeviceBufferTest = test::CudaTest<>;

TEST_F(CudaDeviceBufferTest, RoundTrip) {
    const std::vector<int> host = {1, -2, 3, 1 << 30, 5};
    DeviceBuffer<int> buffer(host.size());
    buffer.copy_from_host(host);
    std::vector<int> back(host.size());
    buffer.copy_to_host(back);
    EXPECT_EQ(back, host);

    DeviceBuffer<int> moved = std::move(buffer);
    EXPECT_EQ(buffer.data(), nullptr);  // NOLINT(bugprone-use-after-move): checking the move
    EXPECT_EQ(moved.size(), host.size());
}

}  // namespace
}  // namespace fluoro::cuda
