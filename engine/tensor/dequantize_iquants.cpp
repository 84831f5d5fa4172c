// Dequantization of the IQ super-block types (ggml-quants.c dequantize_row_iq4_xs, _iq2_xxs ...):
// 256 elements each, in 8 groups of 32. The IQ2/IQ3 types store per group of 8 (or 4) elements a
// grid index (iq_grids.h) and 8 sign bits; IQ4_XS stores IQ4_NL's nibbles with 6-bit scales.
// The float expressions keep ggml's order of operations, so results are bit-identical.
#include <cstring>

#include "tensor/block_kernels.h"
#include "tensor/fp16.h"
#include "tensor/iq_grids.h"

namespace fluoro::detail {
namespace {

uint32_t load_u32(const void* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}

// Byte k of a grid entry.
int grid_byte(uint64_t entry, int k) {
    return static_cast<int>((entry >> (8 * k)) & 0xFF);
}

// out[j] = db · magnitude j · (sign bit j ? −1 : 1) for the n bytes of a grid entry; sign bits
// start at bit `first_sign` of `signs`.
void put_signed(float db, uint64_t entry, uint8_t signs, int first_sign, int n, float* out) {
    for (int j = 0; j < n; ++j) {
        const float sign = (signs >> (first_sign + j)) & 1 ? -1.0f : 1.0f;
        out[j] = db * static_cast<float>(grid_byte(entry, j)) * sign;
    }
}

}  // namespace

// Group of 32: scale 6 bits (4 in scales_l, 2 in scales_h), x = d · (ls − 32) · iq4nl[q].
void dequantize_block(const BlockIQ4_XS& b, float* out) {
    const float d = fp16_to_fp32(b.d);
    for (int ib = 0; ib < 8; ++ib) {
        const int ls =
            ((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0F) | (((b.scales_h >> (2 * ib)) & 3) << 4);
        const float dl = d * static_cast<float>(ls - 32);
        const uint8_t* qs = b.qs + 16 * ib;
        for (int j = 0; j < 16; ++j) {
            out[32 * ib + j] = dl * static_cast<float>(kValuesIQ4NL[qs[j] & 0x0F]);
            out[32 * ib + j + 16] = dl * static_cast<float>(kValuesIQ4NL[qs[j] >> 4]);
        }
    }
}

// Group of 32 = two uint32: 4 grid indices (bytes), then 4 × 7 sign-index bits and a 4-bit scale.
void dequantize_block(const BlockIQ2_XXS& b, float* out) {
    const float d = fp16_to_fp32(b.d);
    for (int ib = 0; ib < 8; ++ib) {
        const uint32_t idx = load_u32(b.qs + 4 * ib);
        const uint32_t aux = load_u32(b.qs + 4 * ib + 2);
        const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.25f;
        for (int l = 0; l < 4; ++l) {
            const uint64_t entry = kIQ2XXSGrid[(idx >> (8 * l)) & 0xFF];
            put_signed(db, entry, kSignsIQ2XS[(aux >> (7 * l)) & 127], 0, 8, out + 32 * ib + 8 * l);
        }
    }
}

// Group of 8 = one uint16: 9-bit grid index, 7-bit sign index; a 4-bit scale per 16 elements.
void dequantize_block(const BlockIQ2_XS& b, float* out) {
    const float d = fp16_to_fp32(b.d);
    for (int ib = 0; ib < 8; ++ib) {
        const float db[2] = {d * (0.5f + static_cast<float>(b.scales[ib] & 0x0F)) * 0.25f,
                             d * (0.5f + static_cast<float>(b.scales[ib] >> 4)) * 0.25f};
        for (int l = 0; l < 4; ++l) {
            const uint16_t q = b.qs[4 * ib + l];
            put_signed(db[l / 2], kIQ2XSGrid[q & 511], kSignsIQ2XS[q >> 9], 0, 8,
                       out + 32 * ib + 8 * l);
        }
    }
}

// Group of 8: 8 low index bits in qs, 2 high in qh, 8 explicit sign bits after the indices.
void dequantize_block(const BlockIQ2_S& b, float* out) {
    const float d = fp16_to_fp32(b.d);
    const uint8_t* signs = b.qs + kQK_K / 8;
    for (int ib = 0; ib < 8; ++ib) {
        const float db[2] = {d * (0.5f + static_cast<float>(b.scales[ib] & 0x0F)) * 0.25f,
                             d * (0.5f + static_cast<float>(b.scales[ib] >> 4)) * 0.25f};
        for (int l = 0; l < 4; ++l) {
            const int index = b.qs[4 * ib + l] | ((b.qh[ib] << (8 - 2 * l)) & 0x300);
            put_signed(db[l / 2], kIQ2SGrid[index], signs[4 * ib + l], 0, 8, out + 32 * ib + 8 * l);
        }
    }
}

// Group of 32: 8 grid indices (4 values each) in qs, then per group a uint32 of 4 × 7 sign-index
// bits and a 4-bit scale.
void dequantize_block(const BlockIQ3_XXS& b, float* out) {
    const float d = fp16_to_fp32(b.d);
    const uint8_t* scales_and_signs = b.qs + kQK_K / 4;
    for (int ib = 0; ib < 8; ++ib) {
        const uint32_t aux = load_u32(scales_and_signs + 4 * ib);
        const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
        const uint8_t* qs = b.qs + 8 * ib;
        for (int l = 0; l < 4; ++l) {
            const uint8_t signs = kSignsIQ2XS[(aux >> (7 * l)) & 127];
            float* y = out + 32 * ib + 8 * l;
            put_signed(db, kIQ3XXSGrid[qs[2 * l]], signs, 0, 4, y);
            put_signed(db, kIQ3XXSGrid[qs[2 * l + 1]], signs, 4, 4, y + 4);
        }
    }
}

// Group of 32: 8 grid indices of 9 bits (8 in qs, the 9th in qh), 32 explicit sign bits, an odd
// 4-bit scale 1 + 2s per group.
void dequantize_block(const BlockIQ3_S& b, float* out) {
    const float d = fp16_to_fp32(b.d);
    for (int ib = 0; ib < 8; ++ib) {
        const int s = (b.scales[ib / 2] >> (4 * (ib % 2))) & 0x0F;
        const float db = d * static_cast<float>(1 + 2 * s);
        const uint8_t* qs = b.qs + 8 * ib;
        const uint8_t* signs = b.signs + 4 * ib;
        const int qh = b.qh[ib];
        for (int l = 0; l < 4; ++l) {
            const int i1 = qs[2 * l] | ((qh << (8 - 2 * l)) & 256);
            const int i2 = qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256);
            float* y = out + 32 * ib + 8 * l;
            put_signed(db, kIQ3SGrid[i1], signs[l], 0, 4, y);
            put_signed(db, kIQ3SGrid[i2], signs[l], 4, 4, y + 4);
        }
    }
}

// Group of 8 values of an IQ1 grid entry (int8 bytes -1, 0, 1): out[j] = dl * (grid[j] + delta).
void put_shifted(float dl, uint64_t entry, float delta, float* out) {
    for (int j = 0; j < 8; ++j) {
        const auto v = static_cast<int8_t>(grid_byte(entry, j));
        out[j] = dl * (static_cast<float>(v) + delta);
    }
}

void dequantize_block(const BlockIQ1_S& b, float* out) {
    const float d = fp16_to_fp32(b.d);
    for (int ib = 0; ib < 8; ++ib) {
        const int qh = b.qh[ib];
        const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
        const float delta = qh & 0x8000 ? -kIQ1Delta : kIQ1Delta;
        for (int l = 0; l < 4; ++l) {
            const int index = b.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8);
            put_shifted(dl, kIQ1SGrid[index], delta, out + 32 * ib + 8 * l);
        }
    }
}

void dequantize_block(const BlockIQ1_M& b, float* out) {
    const float d = fp16_to_fp32(iq1m_scale_bits(b.scales));
    for (int ib = 0; ib < 8; ++ib) {
        const int sc = b.scales[2 * (ib / 2)] | b.scales[2 * (ib / 2) + 1] << 8;
        const int shift = 6 * (ib % 2);
        const float dl[2] = {d * static_cast<float>(2 * ((sc >> shift) & 7) + 1),
                             d * static_cast<float>(2 * ((sc >> (shift + 3)) & 7) + 1)};
        for (int l = 0; l < 4; ++l) {
            const int qh = b.qh[2 * ib + l / 2] >> (4 * (l % 2));  // this group's 4 bits
            const int index = b.qs[4 * ib + l] | ((qh & 7) << 8);
            const float delta = qh & 8 ? -kIQ1Delta : kIQ1Delta;
            put_shifted(dl[l / 2], kIQ1SGrid[index], delta, out + 32 * ib + 8 * l);
        }
    }
}

}  // namespace fluoro::detail
