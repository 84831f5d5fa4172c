// Dequantization of the 256-element k-quant super-blocks (ggml-quants.c dequantize_row_q2_K
// ... dequantize_row_q8_K). The float expressions keep ggml's order of operations, so results
// are bit-identical; see blocks.h for each layout's formula.
#include "tensor/block_kernels.h"
#include "tensor/fp16.h"

namespace fluoro::detail {
namespace {

float to_float(int v) {
    return static_cast<float>(v);
}

// Q3_K sub-block i's (0..15) 6-bit scale minus 32: the low 4 bits are nibbles of bytes 0..7
// (low nibbles for i < 8, high for i >= 8), the high 2 bits are bit pair i/4 of byte 8 + i%4.
int q3_k_scale(const uint8_t* scales, int i) {
    const int low = i < 8 ? (scales[i] & 0xF) : (scales[i - 8] >> 4);
    const int high = (scales[8 + i % 4] >> (2 * (i / 4))) & 3;
    return (low | (high << 4)) - 32;
}

// Shared by Q4_K and Q5_K (qh == nullptr for Q4_K). Four chunks of 64 elements; chunk g reads
// qs[32g .. 32g+31]: the low nibbles are sub-block 2g, the high nibbles sub-block 2g+1. Q5_K
// adds 16 when bit `sub` of qh[l] is set.
void dequantize_k4(float d, float dmin, const uint8_t* scales, const uint8_t* qs, const uint8_t* qh,
                   float* out) {
    for (int g = 0; g < 4; ++g) {
        const uint8_t* q = qs + 32 * g;
        for (int part = 0; part < 2; ++part) {
            const int sub = 2 * g + part;
            const K4ScaleMin sm = k4_scale_min(scales, sub);
            const float dl = d * to_float(sm.scale);
            const float ml = dmin * to_float(sm.min);
            for (int l = 0; l < 32; ++l) {
                int v = part == 0 ? (q[l] & 0xF) : (q[l] >> 4);
                if (qh != nullptr && ((qh[l] >> sub) & 1)) v += 16;
                *out++ = dl * to_float(v) - ml;
            }
        }
    }
}

}  // namespace

// Two halves of 128 elements, each reading 32 qs bytes four times (bit pairs 0-1, 2-3, 4-5,
// 6-7). Each pass yields two sub-blocks of 16, from qs[0..16) and qs[16..32), and each
// sub-block takes the next scale byte.
void dequantize_block(const BlockQ2_K& b, float* out) {
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    int is = 0;
    for (int half = 0; half < 2; ++half) {
        const uint8_t* q = b.qs + 32 * half;
        for (int shift = 0; shift < 8; shift += 2) {
            for (int part = 0; part < 2; ++part) {
                const uint8_t sc = b.scales[is++];
                const float dl = d * to_float(sc & 0xF);
                const float ml = dmin * to_float(sc >> 4);
                for (int l = 0; l < 16; ++l)
                    *out++ = dl * to_float((q[16 * part + l] >> shift) & 3) - ml;
            }
        }
    }
}

// Same traversal as Q2_K. The high bit of an element is bit m of hmask[l] (l = byte index
// within the 32), where m counts the 8 passes across both halves; a clear bit subtracts 4.
void dequantize_block(const BlockQ3_K& b, float* out) {
    const float d = fp16_to_fp32(b.d);
    int is = 0;
    int mask_bit = 0;
    for (int half = 0; half < 2; ++half) {
        const uint8_t* q = b.qs + 32 * half;
        for (int shift = 0; shift < 8; shift += 2, ++mask_bit) {
            for (int part = 0; part < 2; ++part) {
                const float dl = d * to_float(q3_k_scale(b.scales, is++));
                for (int l = 16 * part; l < 16 * part + 16; ++l) {
                    const int high = (b.hmask[l] >> mask_bit) & 1;
                    *out++ = dl * to_float(((q[l] >> shift) & 3) - (high ? 0 : 4));
                }
            }
        }
    }
}

void dequantize_block(const BlockQ4_K& b, float* out) {
    dequantize_k4(fp16_to_fp32(b.d), fp16_to_fp32(b.dmin), b.scales, b.qs, nullptr, out);
}

void dequantize_block(const BlockQ5_K& b, float* out) {
    dequantize_k4(fp16_to_fp32(b.d), fp16_to_fp32(b.dmin), b.scales, b.qs, b.qh, out);
}

// Two halves of 128 elements; half h uses ql[64h..], qh[32h..] and scales[8h..]. For l in
// 0..31, qh[l] carries the top 2 bits of elements l, l+32, l+64 and l+96 (bit pairs 0..3);
// the low 4 bits are the low/high nibbles of ql[l] and ql[l+32].
void dequantize_block(const BlockQ6_K& b, float* out) {
    const float d = fp16_to_fp32(b.d);
    for (int half = 0; half < 2; ++half) {
        const uint8_t* ql = b.ql + 64 * half;
        const uint8_t* qh = b.qh + 32 * half;
        const int8_t* sc = b.scales + 8 * half;
        float* y = out + 128 * half;
        for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l] = d * to_float(sc[is]) * to_float(q1);
            y[l + 32] = d * to_float(sc[is + 2]) * to_float(q2);
            y[l + 64] = d * to_float(sc[is + 4]) * to_float(q3);
            y[l + 96] = d * to_float(sc[is + 6]) * to_float(q4);
        }
    }
}

void dequantize_block(const BlockQ8_K& b, float* out) {
    for (int j = 0; j < kQK_K; ++j) out[j] = b.d * to_float(b.qs[j]);
}

}  // namespace fluoro::detail
