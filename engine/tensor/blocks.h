// On-disk block layouts of the quantized ggml tensor types (ggml-common.h), byte for byte.
// Half-precision fields are raw IEEE fp16 bits (convert with fp16.h); everything is
// little-endian. The reference kernels, the SIMD dot products and the CUDA backend all read
// tensor data through these structs, so their sizes are pinned by static_assert.
#pragma once

#include <bit>
#include <cstdint>

namespace fluoro {

static_assert(std::endian::native == std::endian::little, "GGUF blocks are little-endian");

constexpr int kQK = 32;     // elements in a legacy block (Q4_0 ... Q8_1, IQ4_NL)
constexpr int kQK_K = 256;  // elements in a k-quant super-block

// x = (q - 8) * d; element j in the low nibble of qs[j], element j+16 in its high nibble.
struct BlockQ4_0 {
    static constexpr int kElems = kQK;
    uint16_t d;
    uint8_t qs[kQK / 2];
};

// x = q * d + m; nibble order as Q4_0.
struct BlockQ4_1 {
    static constexpr int kElems = kQK;
    uint16_t d;
    uint16_t m;
    uint8_t qs[kQK / 2];
};

// x = (q - 16) * d; q's 5th bit for element j is bit j of the little-endian uint32 qh.
struct BlockQ5_0 {
    static constexpr int kElems = kQK;
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};

// x = q * d + m; bits as Q5_0.
struct BlockQ5_1 {
    static constexpr int kElems = kQK;
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};

// x = q * d.
struct BlockQ8_0 {
    static constexpr int kElems = kQK;
    uint16_t d;
    int8_t qs[kQK];
};

// x = q * d; s = d * sum(qs), precomputed for dot products with Q4_1/Q5_1 weights.
struct BlockQ8_1 {
    static constexpr int kElems = kQK;
    uint16_t d;
    uint16_t s;
    int8_t qs[kQK];
};

// x = d * kvalues_iq4nl[q]; nibble order as Q4_0.
struct BlockIQ4_NL {
    static constexpr int kElems = kQK;
    uint16_t d;
    uint8_t qs[kQK / 2];
};

// OCP microscaling FP4: x = 2^(e - 127) * e2m1[q], q 4-bit (sign, 2 exponent bits, 1 mantissa
// bit); nibble order as Q4_0. ggml stores the E2M1 values doubled (kValuesMXFP4) and halves the
// scale instead (e8m0_to_fp32_half). No fp16 field: the block has byte alignment.
struct BlockMXFP4 {
    static constexpr int kElems = kQK;
    uint8_t e;  // E8M0: a bare exponent, 2^(e - 127); ggml (and we) read 0xFF as 2^128, not NaN
    uint8_t qs[kQK / 2];
};

// 16 sub-blocks of 16: x = d * (sc & 15) * q - dmin * (sc >> 4), q 2-bit.
struct BlockQ2_K {
    static constexpr int kElems = kQK_K;
    uint8_t scales[kQK_K / 16];
    uint8_t qs[kQK_K / 4];
    uint16_t d;
    uint16_t dmin;
};

// 16 sub-blocks of 16: x = d * (scale - 32) * (q - (hbit ? 0 : 4)), q 2-bit, 6-bit scales.
struct BlockQ3_K {
    static constexpr int kElems = kQK_K;
    uint8_t hmask[kQK_K / 8];
    uint8_t qs[kQK_K / 4];
    uint8_t scales[12];
    uint16_t d;
};

// 8 sub-blocks of 32: x = d * sc * q - dmin * m, q 4-bit, 6-bit sc and m packed in scales.
struct BlockQ4_K {
    static constexpr int kElems = kQK_K;
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qs[kQK_K / 2];
};

// Q4_K/Q5_K sub-block j's (0..7) 6-bit scale and min (ggml's get_scale_min_k4): bytes 0..3
// hold scales 0..3, bytes 4..7 mins 0..3, bytes 8..11 the low nibbles of scales and mins
// 4..7, whose high 2 bits are the top bits of bytes 0..3 and 4..7.
struct K4ScaleMin {
    int scale;
    int min;
};
inline K4ScaleMin k4_scale_min(const uint8_t* s, int j) {
    if (j < 4) return {s[j] & 63, s[j + 4] & 63};
    return {(s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4)};
}

// As Q4_K with a 5th bit per element in qh.
struct BlockQ5_K {
    static constexpr int kElems = kQK_K;
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qh[kQK_K / 8];
    uint8_t qs[kQK_K / 2];
};

// 16 sub-blocks of 16: x = d * scale * (q - 32), q 6-bit (4 low bits in ql, 2 high in qh).
struct BlockQ6_K {
    static constexpr int kElems = kQK_K;
    uint8_t ql[kQK_K / 2];
    uint8_t qh[kQK_K / 4];
    int8_t scales[kQK_K / 16];
    uint16_t d;
};

// ---- IQ super-blocks of 256 (8 groups of 32); grids and signs in iq_grids.h ----

// 8 groups of 32: x = d * (ls - 32) * kValuesIQ4NL[q], ls 6-bit: low 4 bits in scales_l (group
// 2i in the low nibble of byte i, 2i+1 in the high), high 2 bits at bit 2g of scales_h; nibble
// order within a group as Q4_0.
struct BlockIQ4_XS {
    static constexpr int kElems = kQK_K;
    uint16_t d;
    uint16_t scales_h;
    uint8_t scales_l[kQK_K / 64];
    uint8_t qs[kQK_K / 2];
};

// Group g of 32 = qs[4g..4g+3] as two uint32: four 8-bit grid indices (8 values each), then four
// 7-bit sign indices (kSignsIQ2XS) and a 4-bit scale s; x = d * (0.5 + s) / 4 * ±grid.
struct BlockIQ2_XXS {
    static constexpr int kElems = kQK_K;
    uint16_t d;
    uint16_t qs[kQK_K / 8];
};

// Each uint16 of qs covers 8 values: 9-bit grid index, 7-bit sign index; a 4-bit scale per 16.
struct BlockIQ2_XS {
    static constexpr int kElems = kQK_K;
    uint16_t d;
    uint16_t qs[kQK_K / 8];
    uint8_t scales[kQK_K / 32];
};

// qs: 32 low index bytes, then 32 sign bytes (one per 8 values); qh: 2 high index bits per group
// of 8; a 4-bit scale per 16.
struct BlockIQ2_S {
    static constexpr int kElems = kQK_K;
    uint16_t d;
    uint8_t qs[kQK_K / 4];
    uint8_t qh[kQK_K / 32];
    uint8_t scales[kQK_K / 32];
};

// qs: 64 grid indices (4 values each), then per group of 32 a uint32 of four 7-bit sign indices
// and a 4-bit scale s; x = d * (0.5 + s) / 2 * ±grid.
struct BlockIQ3_XXS {
    static constexpr int kElems = kQK_K;
    uint16_t d;
    uint8_t qs[3 * kQK_K / 8];
};

// 9-bit grid indices (8 bits in qs, the 9th in qh), explicit sign bits, a 4-bit scale s per group
// of 32: x = d * (1 + 2s) * ±grid.
struct BlockIQ3_S {
    static constexpr int kElems = kQK_K;
    uint16_t d;
    uint8_t qs[kQK_K / 4];
    uint8_t qh[kQK_K / 32];
    uint8_t signs[kQK_K / 8];
    uint8_t scales[kQK_K / 64];
};

// IQ1_S: group of 8 = an 11-bit index into kIQ1SGrid (values -1, 0, 1; 8 low bits in qs, 3 high
// in qh), per group of 32 a uint16 qh with the four 3-bit high parts, a 3-bit scale s (bits 12-14)
// and the sign of a shift (bit 15): x = d * (2s + 1) * (grid ± 1/8).
struct BlockIQ1_S {
    static constexpr int kElems = kQK_K;
    uint16_t d;
    uint8_t qs[kQK_K / 8];
    uint16_t qh[kQK_K / 32];
};

// IQ1_M: as IQ1_S with a 3-bit scale per 16 and a shift sign per 8 (qh: per group of 8, 3 high
// index bits and the sign); the fp16 d is spread over the top nibbles of the four uint16 scales.
struct BlockIQ1_M {
    static constexpr int kElems = kQK_K;
    uint8_t qs[kQK_K / 8];
    uint8_t qh[kQK_K / 16];
    uint8_t scales[kQK_K / 32];
};

// The shift of IQ1_S/IQ1_M values (ggml's IQ1S_DELTA, IQ1M_DELTA).
inline constexpr float kIQ1Delta = 0.125f;

// IQ1_M's d: nibble k of its fp16 bits is the top nibble of little-endian uint16 scale k.
inline uint16_t iq1m_scale_bits(const uint8_t* scales) {
    uint16_t sc[4];
    for (int k = 0; k < 4; ++k) sc[k] = uint16_t(scales[2 * k] | scales[2 * k + 1] << 8);
    return uint16_t((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                    (sc[3] & 0xF000));
}

// Activation format for k-quant dot products: x = d * q; bsums[i] = sum of qs[16i .. 16i+15].
struct BlockQ8_K {
    static constexpr int kElems = kQK_K;
    float d;
    int8_t qs[kQK_K];
    int16_t bsums[kQK_K / 16];
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockMXFP4) == 17);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockIQ2_XXS) == 66);
static_assert(sizeof(BlockIQ2_XS) == 74);
static_assert(sizeof(BlockIQ2_S) == 82);
static_assert(sizeof(BlockIQ3_XXS) == 98);
static_assert(sizeof(BlockIQ3_S) == 110);
static_assert(sizeof(BlockIQ1_S) == 50);
static_assert(sizeof(BlockIQ1_M) == 56);

// The non-linear IQ4_NL codebook (ggml-common.h kvalues_iq4nl).
inline constexpr int8_t kValuesIQ4NL[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// The E2M1 values {0, 0.5, 1, 1.5, 2, 3, 4, 6} and their negatives, doubled to integers as
// ggml's kvalues_mxfp4 holds them: index = sign bit (8) | exponent and mantissa bits.
inline constexpr int8_t kValuesMXFP4[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                            0, -1, -2, -3, -4, -6, -8, -12};

// Half the E8M0 scale, 2^(e - 128), exactly (ggml_e8m0_to_fp32_half): e = 0 and 1 give the
// float32 subnormals 2^-128 and 2^-127, e >= 2 a normal with biased exponent e - 1.
inline float e8m0_to_fp32_half(uint8_t e) {
    const uint32_t bits = e < 2 ? (0x00200000u << e) : (uint32_t(e - 1) << 23);
    return std::bit_cast<float>(bits);
}

}  // namespace fluoro
