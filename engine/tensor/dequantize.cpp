#include "tensor/dequantize.h"

#include <cstddef>
#include <cstring>
#include <string>

#include "core/error.h"
#include "tensor/block_kernels.h"
#include "tensor/fp16.h"

namespace fluoro {
namespace detail {

int64_t checked_block_count(std::string_view op, GgmlType type, int64_t n) {
    const int64_t block = type_traits(type).block_elems;
    if (n < 0 || n % block != 0) {
        throw Error(std::string(op) + ": " + std::to_string(n) + " elements is not a whole " +
                    "number of " + std::string(type_name(type)) + " blocks (" +
                    std::to_string(block) + " elements each)");
    }
    return n / block;
}

}  // namespace detail

namespace {

// Blocks are copied out one at a time, so src may have any alignment.
template <class Block>
void dequantize_blocks(const void* src, float* dst, int64_t n_blocks) {
    const auto* bytes = static_cast<const std::byte*>(src);
    for (int64_t i = 0; i < n_blocks; ++i) {
        Block block;
        std::memcpy(&block, bytes + i * sizeof(Block), sizeof(Block));
        detail::dequantize_block(block, dst + i * Block::kElems);
    }
}

template <float (*Convert)(uint16_t)>
void dequantize_16bit(const void* src, float* dst, int64_t n) {
    const auto* bytes = static_cast<const std::byte*>(src);
    for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, bytes + 2 * i, sizeof(h));
        dst[i] = Convert(h);
    }
}

}  // namespace

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
    const int64_t n_blocks = detail::checked_block_count("dequantize_row", type, n);
    switch (type) {
        case GgmlType::F32:
            if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
            return;
        case GgmlType::F16:
            return dequantize_16bit<fp16_to_fp32>(src, dst, n);
        case GgmlType::BF16:
            return dequantize_16bit<bf16_to_fp32>(src, dst, n);
        case GgmlType::Q4_0:
            return dequantize_blocks<BlockQ4_0>(src, dst, n_blocks);
        case GgmlType::Q4_1:
            return dequantize_blocks<BlockQ4_1>(src, dst, n_blocks);
        case GgmlType::Q5_0:
            return dequantize_blocks<BlockQ5_0>(src, dst, n_blocks);
        case GgmlType::Q5_1:
            return dequantize_blocks<BlockQ5_1>(src, dst, n_blocks);
        case GgmlType::Q8_0:
            return dequantize_blocks<BlockQ8_0>(src, dst, n_blocks);
        case GgmlType::Q8_1:
            return dequantize_blocks<BlockQ8_1>(src, dst, n_blocks);
        case GgmlType::IQ4_NL:
            return dequantize_blocks<BlockIQ4_NL>(src, dst, n_blocks);
        case GgmlType::MXFP4:
            return dequantize_blocks<BlockMXFP4>(src, dst, n_blocks);
        case GgmlType::Q2_K:
            return dequantize_blocks<BlockQ2_K>(src, dst, n_blocks);
        case GgmlType::Q3_K:
            return dequantize_blocks<BlockQ3_K>(src, dst, n_blocks);
        case GgmlType::Q4_K:
            return dequantize_blocks<BlockQ4_K>(src, dst, n_blocks);
        case GgmlType::Q5_K:
            return dequantize_blocks<BlockQ5_K>(src, dst, n_blocks);
        case GgmlType::Q6_K:
            return dequantize_blocks<BlockQ6_K>(src, dst, n_blocks);
        case GgmlType::Q8_K:
            return dequantize_blocks<BlockQ8_K>(src, dst, n_blocks);
        case GgmlType::IQ4_XS:
            return dequantize_blocks<BlockIQ4_XS>(src, dst, n_blocks);
        case GgmlType::IQ2_XXS:
            return dequantize_blocks<BlockIQ2_XXS>(src, dst, n_blocks);
        case GgmlType::IQ2_XS:
            return dequantize_blocks<BlockIQ2_XS>(src, dst, n_blocks);
        case GgmlType::IQ2_S:
            return dequantize_blocks<BlockIQ2_S>(src, dst, n_blocks);
        case GgmlType::IQ3_XXS:
            return dequantize_blocks<BlockIQ3_XXS>(src, dst, n_blocks);
        case GgmlType::IQ3_S:
            return dequantize_blocks<BlockIQ3_S>(src, dst, n_blocks);
        case GgmlType::IQ1_S:
            return dequantize_blocks<BlockIQ1_S>(src, dst, n_blocks);
        case GgmlType::IQ1_M:
            return dequantize_blocks<BlockIQ1_M>(src, dst, n_blocks);
        default:
            break;
    }
    throw UnsupportedError("dequantize_row: tensor type " + std::string(type_name(type)) +
                           " cannot be dequantized");
}

}  // namespace fluoro
