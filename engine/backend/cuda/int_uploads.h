// Small integer arrays a step's kernels need on the device (token ids, positions, sequence ids,
// KV slot rows, block tables). A forward step asks for the same arrays in every layer, so uploads
// are kept by content: an array equal to one uploaded before is not sent again. Each upload goes
// through pinned host memory with one asynchronous copy on the stream; a slot's pinned buffer is
// rewritten only after its last copy completed.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <vector>

namespace fluoro::cuda {

class IntUploads {
  public:
    explicit IntUploads(cudaStream_t stream, int slots = 16);
    ~IntUploads();
    IntUploads(const IntUploads&) = delete;
    IntUploads& operator=(const IntUploads&) = delete;

    // Device copy of `values` (valid until `slots` other distinct arrays have been uploaded).
    const int32_t* get(std::span<const int32_t> values);

  private:
    struct Slot {
        std::vector<int32_t> values;  // what the device copy holds
        int32_t* host = nullptr;      // pinned
        int32_t* device = nullptr;
        size_t capacity = 0;  // elements
        cudaEvent_t copied = nullptr;
        uint64_t last_use = 0;
    };
    cudaStream_t stream_;
    std::vector<Slot> slots_;
    uint64_t clock_ = 0;
};

}  // namespace fluoro::cuda
