// DeviceBuffer<T>: an owning, move-only array in GPU memory with checked, synchronous host
// copies. Small on purpose: tests and one-off uploads; the engine's hot path will manage its
// own pools and streams.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <string>
#include <utility>

#include "backend/cuda/cuda_check.h"
#include "core/error.h"

namespace fluoro::cuda {

template <typename T>
class DeviceBuffer {
  public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(size_t count) : count_(count) {
        if (count_ == 0) return;
        void* ptr = nullptr;
        FLUORO_CUDA_CHECK(cudaMalloc(&ptr, count_ * sizeof(T)));
        data_ = static_cast<T*>(ptr);
    }
    ~DeviceBuffer() {
        if (data_ != nullptr) cudaFree(data_);  // no throw from a destructor
    }
    DeviceBuffer(DeviceBuffer&& other) noexcept
        : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
        if (this != &other) {
            if (data_ != nullptr) cudaFree(data_);
            data_ = std::exchange(other.data_, nullptr);
            count_ = std::exchange(other.count_, 0);
        }
        return *this;
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    T* data() { return data_; }
    const T* data() const { return data_; }
    size_t size() const { return count_; }
    size_t bytes() const { return count_ * sizeof(T); }

    void copy_from_host(std::span<const T> src) {
        check_size(src.size(), "copy_from_host");
        if (count_ != 0) {
            FLUORO_CUDA_CHECK(cudaMemcpy(data_, src.data(), bytes(), cudaMemcpyHostToDevice));
        }
    }
    void copy_to_host(std::span<T> dst) const {
        check_size(dst.size(), "copy_to_host");
        if (count_ != 0) {
            FLUORO_CUDA_CHECK(cudaMemcpy(dst.data(), data_, bytes(), cudaMemcpyDeviceToHost));
        }
    }

  private:
    void check_size(size_t host_count, const char* what) const {
        if (host_count != count_) {
            throw Error(std::string("DeviceBuffer::") + what + ": host span has " +
                        std::to_string(host_count) + " elements, device buffer " +
                        std::to_string(count_));
        }
    }

    T* data_ = nullptr;
    size_t count_ = 0;
};

}  // namespace fluoro::cuda
