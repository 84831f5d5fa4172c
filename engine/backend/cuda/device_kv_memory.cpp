#include "backend/cuda/device_kv_memory.h"

#include <utility>

#include "backend/cuda/cuda_check.h"

namespace fluoro::cuda {
namespace {

class DeviceKvMemory final : public KvMemory {
  public:
    explicit DeviceKvMemory(cudaStream_t stream) : stream_(stream) {}
    ~DeviceKvMemory() override {
        if (staging_ != nullptr) cudaFree(staging_);
    }
    DeviceKvMemory(const DeviceKvMemory&) = delete;
    DeviceKvMemory& operator=(const DeviceKvMemory&) = delete;

    std::string_view name() const override { return "CUDA device"; }
    bool host_visible() const override { return false; }
    std::byte* allocate(size_t bytes) override {
        void* p = nullptr;
        if (cudaMalloc(&p, bytes) != cudaSuccess) {
            cudaGetLastError();  // out of memory is not sticky; clear it for the next call
            return nullptr;
        }
        return static_cast<std::byte*>(p);
    }
    void release(std::byte* p) noexcept override {
        if (p != nullptr) cudaFree(p);
    }
    void move(std::byte* dst, const std::byte* src, size_t bytes) override {
        if (bytes == 0 || dst == src) return;
        const bool overlap = dst < src + bytes && src < dst + bytes;
        if (!overlap) {
            FLUORO_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
            return;
        }
        if (bytes > staging_bytes_) {
            // Queued work may still read the old staging buffer.
            FLUORO_CUDA_CHECK(cudaStreamSynchronize(stream_));
            if (staging_ != nullptr) cudaFree(std::exchange(staging_, nullptr));
            staging_bytes_ = 0;
            void* p = nullptr;
            FLUORO_CUDA_CHECK(cudaMalloc(&p, bytes));
            staging_ = static_cast<std::byte*>(p);
            staging_bytes_ = bytes;
        }
        FLUORO_CUDA_CHECK(cudaMemcpyAsync(staging_, src, bytes, cudaMemcpyDeviceToDevice, stream_));
        FLUORO_CUDA_CHECK(cudaMemcpyAsync(dst, staging_, bytes, cudaMemcpyDeviceToDevice, stream_));
    }

    void to_host(void* dst, const std::byte* src, size_t bytes) override {
        if (bytes == 0) return;
        FLUORO_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
        FLUORO_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
    void from_host(std::byte* dst, const void* src, size_t bytes) override {
        if (bytes == 0) return;
        FLUORO_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
        FLUORO_CUDA_CHECK(cudaStreamSynchronize(stream_));  // src may go away on return
    }

  private:
    cudaStream_t stream_;
    std::byte* staging_ = nullptr;
    size_t staging_bytes_ = 0;
};

}  // namespace

std::shared_ptr<KvMemory> device_kv_memory(cudaStream_t stream) {
    return std::make_shared<DeviceKvMemory>(stream);
}

}  // namespace fluoro::cuda
