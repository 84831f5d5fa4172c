#include "backend/cuda/int_uploads.h"

#include <algorithm>
#include <cstring>

#include "backend/cuda/cuda_check.h"

namespace fluoro::cuda {

IntUploads::IntUploads(cudaStream_t stream, int slots) : stream_(stream), slots_(size_t(slots)) {
    for (Slot& s : slots_)
        FLUORO_CUDA_CHECK(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming));
}

IntUploads::~IntUploads() {
    for (Slot& s : slots_) {
        if (s.copied != nullptr) cudaEventDestroy(s.copied);
        if (s.host != nullptr) cudaFreeHost(s.host);
        if (s.device != nullptr) cudaFree(s.device);
    }
}

const int32_t* IntUploads::get(std::span<const int32_t> values) {
    ++clock_;
    for (Slot& s : slots_) {
        if (s.device != nullptr && s.values.size() == values.size() &&
            std::equal(values.begin(), values.end(), s.values.begin())) {
            s.last_use = clock_;
            return s.device;
        }
    }
    Slot& s = *std::min_element(slots_.begin(), slots_.end(), [](const Slot& a, const Slot& b) {
        return a.last_use < b.last_use;
    });
    // The slot's previous copy may still be reading its pinned buffer. Kernels queued before
    // may still read its device copy, but the new copy is queued behind them on the stream.
    if (s.device != nullptr) FLUORO_CUDA_CHECK(cudaEventSynchronize(s.copied));
    const size_t n = std::max<size_t>(values.size(), 1);
    if (n > s.capacity) {
        FLUORO_CUDA_CHECK(cudaStreamSynchronize(stream_));  // nothing may use the old buffers
        if (s.host != nullptr) cudaFreeHost(s.host);
        if (s.device != nullptr) cudaFree(s.device);
        s.host = nullptr;
        s.device = nullptr;
        s.capacity = 0;
        const size_t cap = std::max<size_t>(n, 256);
        FLUORO_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&s.host), cap * sizeof(int32_t)));
        FLUORO_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&s.device), cap * sizeof(int32_t)));
        s.capacity = cap;
    }
    s.values.assign(values.begin(), values.end());
    if (!values.empty()) {
        std::memcpy(s.host, values.data(), values.size() * sizeof(int32_t));
        FLUORO_CUDA_CHECK(cudaMemcpyAsync(s.device, s.host, values.size() * sizeof(int32_t),
                                          cudaMemcpyHostToDevice, stream_));
    }
    FLUORO_CUDA_CHECK(cudaEventRecord(s.copied, stream_));
    s.last_use = clock_;
    return s.device;
}

}  // namespace fluoro::cuda
