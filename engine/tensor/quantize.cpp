#include "tensor/quantize.h"

#include <cstddef>
#include <cstring>
#include <string>

#include "core/error.h"
#include "tensor/block_kernels.h"
#include "tensor/fp16.h"

namespace fluoro {
namespace {

// Blocks are built locally and copied out, so dst may have any alignment.
template <class Block>
void quantize_blocks(const float* src, void* dst, int64_t n_blocks) {
    auto* bytes = static_cast<std::byte*>(dst);
    for (int64_t i = 0; i < n_blocks; ++i) {
        Block block{};
        detail::quantize_block(src + i * Block::kElems, block);
        std::memcpy(bytes + i * sizeof(Block), &block, sizeof(Block));
    }
}

template <uint16_t (*Convert)(float)>
void quantize_16bit(const float* src, void* dst, int64_t n) {
    auto* bytes = static_cast<std::byte*>(dst);
    for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = Convert(src[i]);
        std::memcpy(bytes + 2 * i, &h, sizeof(h));
    }
}

}  // namespace

void quantize_row(GgmlType type, const float* src, void* dst, int64_t n) {
    const int64_t n_blocks = detail::checked_block_count("quantize_row", type, n);
    switch (type) {
        case GgmlType::F32:
            if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
            return;
        case GgmlType::F16:
            return quantize_16bit<fp32_to_fp16>(src, dst, n);
        case GgmlType::BF16:
            return quantize_16bit<fp32_to_bf16>(src, dst, n);
        case GgmlType::Q4_0:
            return quantize_blocks<BlockQ4_0>(src, dst, n_blocks);
        case GgmlType::Q4_1:
            return quantize_blocks<BlockQ4_1>(src, dst, n_blocks);
        case GgmlType::Q5_0:
            return quantize_blocks<BlockQ5_0>(src, dst, n_blocks);
        case GgmlType::Q5_1:
            return quantize_blocks<BlockQ5_1>(src, dst, n_blocks);
        case GgmlType::Q8_0:
            return quantize_blocks<BlockQ8_0>(src, dst, n_blocks);
        case GgmlType::Q8_1:
            return quantize_blocks<BlockQ8_1>(src, dst, n_blocks);
        case GgmlType::Q8_K:
            return quantize_blocks<BlockQ8_K>(src, dst, n_blocks);
        default:
            break;
    }
    throw UnsupportedError("quantize_row: tensor type " + std::string(type_name(type)) +
                           " cannot be quantized");
}

}  // namespace fluoro
