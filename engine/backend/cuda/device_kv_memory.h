// KV cache rows in GPU memory: the KvMemory (kv/kv_memory.h) a CUDA backend gives its paged
// cache. Moves are device-to-device copies queued on the backend's stream, so they stay ordered
// with the kernels that read and write the rows; overlapping moves go through a staging buffer.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "kv/kv_memory.h"

namespace fluoro::cuda {

std::shared_ptr<KvMemory> device_kv_memory(cudaStream_t stream);

}  // namespace fluoro::cuda
