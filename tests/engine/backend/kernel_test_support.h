// Helpers shared by the CPU kernel and matmul tests: the weight types the CPU backend multiplies,
// random weight rows in each of them, and activation rows converted to a partner format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#include "backend/cpu/kernels/vec_dot.h"
#include "tensor/blocks.h"
#include "tensor/fp16.h"
#include "tensor/ggml_type.h"
#include "tensor/quantize.h"

namespace fluoro::test {

inline constexpr GgmlType kDotWeightTypes[] = {
    GgmlType::F32,    GgmlType::F16,     GgmlType::BF16,   GgmlType::Q4_0,   GgmlType::Q4_1,
    GgmlType::Q5_0,   GgmlType::Q5_1,    GgmlType::Q8_0,   GgmlType::IQ4_NL, GgmlType::MXFP4,
    GgmlType::Q2_K,   GgmlType::Q3_K,    GgmlType::Q4_K,   GgmlType::Q5_K,   GgmlType::Q6_K,
    GgmlType::IQ4_XS, GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S,  GgmlType::IQ3_XXS,
    GgmlType::IQ3_S,  GgmlType::IQ1_S,   GgmlType::IQ1_M};

// Every instruction set whose kernels this build and CPU run, Generic first.
inline std::vector<cpu::CpuIsa> supported_isas() {
    std::vector<cpu::CpuIsa> isas;
    for (cpu::CpuIsa isa : {cpu::CpuIsa::Generic, cpu::CpuIsa::Avx2, cpu::CpuIsa::Avx512})
        if (cpu::cpu_isa_supported(isa)) isas.push_back(isa);
    return isas;
}

inline bool is_k_quant(GgmlType t) {
    return type_traits(t).block_elems == static_cast<uint32_t>(kQK_K);
}

inline std::vector<float> random_floats(int64_t n, std::mt19937& rng, float scale = 1.0f) {
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& f : v) f = normal(rng);
    return v;
}

// Bytes of `type` for n elements (n a whole number of blocks).
inline std::vector<uint8_t> quantized(GgmlType type, const std::vector<float>& x) {
    std::vector<uint8_t> out(*row_bytes(type, x.size()));
    quantize_row(type, x.data(), out.data(), static_cast<int64_t>(x.size()));
    return out;
}

// Random blocks of a type we have no quantizer for: random bytes everywhere, then sane positive
// fp16 scales at the given offsets (so dequantized values are O(1) and finite).
template <class Block>
std::vector<uint8_t> random_blocks(int64_t n, std::mt19937& rng,
                                   std::initializer_list<size_t> half_offsets, float lo, float hi) {
    const int64_t n_blocks = n / Block::kElems;
    std::vector<uint8_t> out(static_cast<size_t>(n_blocks) * sizeof(Block));
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> scale(lo, hi);
    for (uint8_t& b : out) b = static_cast<uint8_t>(byte(rng));
    for (int64_t i = 0; i < n_blocks; ++i) {
        for (size_t off : half_offsets) {
            const uint16_t h = fp32_to_fp16(scale(rng));
            std::memcpy(out.data() + i * sizeof(Block) + off, &h, sizeof(h));
        }
    }
    return out;
}

// Random MXFP4 blocks: random nibbles, E8M0 exponents 2^-8 .. 2^-4 (values up to 6 · 2^-4).
inline std::vector<uint8_t> random_mxfp4_blocks(int64_t n, std::mt19937& rng) {
    std::vector<uint8_t> out(static_cast<size_t>(n / kQK) * sizeof(BlockMXFP4));
    std::uniform_int_distribution<int> byte(0, 255), exponent(127 - 8, 127 - 4);
    for (size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<uint8_t>(i % sizeof(BlockMXFP4) == 0 ? exponent(rng) : byte(rng));
    return out;
}

// Random IQ1_M blocks: random bytes, then d (spread over the scales' top nibbles) in 0.01..0.05.
inline std::vector<uint8_t> random_iq1m_blocks(int64_t n, std::mt19937& rng) {
    std::vector<uint8_t> out = random_blocks<BlockIQ1_M>(n, rng, {}, 0.0f, 0.0f);
    std::uniform_real_distribution<float> scale(0.01f, 0.05f);
    for (size_t b = 0; b < out.size(); b += sizeof(BlockIQ1_M)) {
        const uint16_t h = fp32_to_fp16(scale(rng));
        uint8_t* sc = out.data() + b + offsetof(BlockIQ1_M, scales);
        for (int k = 0; k < 4; ++k)  // nibble k of h -> bits 12..15 of uint16 k (byte 2k+1)
            sc[2 * k + 1] =
                static_cast<uint8_t>((sc[2 * k + 1] & 0x0F) | (((h >> (4 * k)) & 15) << 4));
    }
    return out;
}

// A random row of n weights of `type`: quantized from normal floats where engine/tensor can
// quantize the type, random blocks with sane scales otherwise (IQ4_NL, MXFP4, the k-quants and the
// other IQ types).
inline std::vector<uint8_t> random_weight_row(GgmlType type, int64_t n, std::mt19937& rng) {
    switch (type) {
        case GgmlType::IQ4_NL:
            return random_blocks<BlockIQ4_NL>(n, rng, {offsetof(BlockIQ4_NL, d)}, 0.002f, 0.02f);
        case GgmlType::MXFP4:
            return random_mxfp4_blocks(n, rng);
        case GgmlType::Q2_K:
            return random_blocks<BlockQ2_K>(
                n, rng, {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)}, 0.01f, 0.1f);
        case GgmlType::Q3_K:
            return random_blocks<BlockQ3_K>(n, rng, {offsetof(BlockQ3_K, d)}, 0.005f, 0.05f);
        case GgmlType::Q4_K:
            return random_blocks<BlockQ4_K>(
                n, rng, {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)}, 0.001f, 0.01f);
        case GgmlType::Q5_K:
            return random_blocks<BlockQ5_K>(
                n, rng, {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)}, 0.0005f, 0.005f);
        case GgmlType::Q6_K:
            return random_blocks<BlockQ6_K>(n, rng, {offsetof(BlockQ6_K, d)}, 0.0002f, 0.002f);
        // IQ types: scales so that the largest values are O(1) (see blocks.h for each formula).
        case GgmlType::IQ4_XS:
            return random_blocks<BlockIQ4_XS>(n, rng, {offsetof(BlockIQ4_XS, d)}, 0.0001f, 0.0005f);
        case GgmlType::IQ2_XXS:
            return random_blocks<BlockIQ2_XXS>(n, rng, {offsetof(BlockIQ2_XXS, d)}, 0.002f, 0.01f);
        case GgmlType::IQ2_XS:
            return random_blocks<BlockIQ2_XS>(n, rng, {offsetof(BlockIQ2_XS, d)}, 0.002f, 0.01f);
        case GgmlType::IQ2_S:
            return random_blocks<BlockIQ2_S>(n, rng, {offsetof(BlockIQ2_S, d)}, 0.002f, 0.01f);
        case GgmlType::IQ3_XXS:
            return random_blocks<BlockIQ3_XXS>(n, rng, {offsetof(BlockIQ3_XXS, d)}, 0.001f, 0.003f);
        case GgmlType::IQ3_S:
            return random_blocks<BlockIQ3_S>(n, rng, {offsetof(BlockIQ3_S, d)}, 0.001f, 0.003f);
        case GgmlType::IQ1_S:
            return random_blocks<BlockIQ1_S>(n, rng, {offsetof(BlockIQ1_S, d)}, 0.01f, 0.05f);
        case GgmlType::IQ1_M:
            return random_iq1m_blocks(n, rng);
        default:
            return quantized(type, random_floats(n, rng));
    }
}

}  // namespace fluoro::test
