// Handles the architecture code passes to a backend: weights resident in the backend (Weight)
// and float32 activation matrices in backend memory (Act). The forward pass only moves handles;
// only the backend touches the bytes, which is what lets the same forward run on CPU and CUDA.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "tensor/ggml_type.h"

namespace fluoro {

struct Weight {
    std::string name;  // GGUF tensor name, for errors and telemetry
    GgmlType type = GgmlType::F32;
    std::array<int64_t, 4> ne{1, 1, 1, 1};  // ne[0] = row length (inputs), ne[1] = rows (outputs)
    const void* data = nullptr;             // backend memory (host for CPU, device for CUDA)
    size_t row_bytes = 0;
    // The backend stores the rows in a layout of its own (CPU: groups, cpu/kernels/interleave.h);
    // only that backend reads the bytes.
    bool interleaved = false;
    bool present() const { return data != nullptr; }
    int64_t n_in() const { return ne[0]; }
    int64_t n_out() const { return ne[1]; }
};

// rows x width floats, row-major, contiguous (stride = width).
struct Act {
    float* data = nullptr;
    int64_t rows = 0;
    int64_t width = 0;
    int64_t size() const { return rows * width; }
};

}  // namespace fluoro
