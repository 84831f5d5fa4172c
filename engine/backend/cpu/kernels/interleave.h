// Weight rows interleaved in groups, the CPU backend's own layout for the types whose decode
// kernel is instruction-bound in the GGUF layout. In a GGUF file each row's blocks are contiguous,
// so a row kernel converts every block's fp16 scale and minimum on its own and reduces the block's
// integer sums across a whole vector before its one multiply-add. With block b of kGroupRows
// consecutive rows stored together, one conversion handles all their scales and one multiply-add
// all their sums: for Q4_1 on AVX2 the one-token loop is 37 instructions per four row-blocks where
// the GGUF-layout loop takes 22 per row-block (counted in the compiled loops, GCC 12), and a
// 576x1536 matrix from cache multiplies 1.8-2.4x faster (fluoro_cpu_matmul_bench, Zen 3). Q8_0
// (the tied output head of both default models) gains less, its sums needing more widening: the
// 576x49152 head, 2 threads, 1807 -> 1209 us for one token, 7510 -> 6018 us for nine.
// ggml's "repack" buffers (Q4_0 8x8, Q4_K 8x8) are the same idea.
//
// The layout is internal to the CPU backend: it interleaves at load (cpu_backend.cpp) and
// matmul() reads it through a RowGroupDotFn; get_rows() takes rows back out with
// deinterleave_row(). Same bytes in all: a group block is kGroupRows GGUF blocks, reordered.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/kernels/vec_dot.h"
#include "tensor/blocks.h"
#include "tensor/ggml_type.h"

namespace fluoro::cpu {

// Rows per interleaved group.
inline constexpr int kGroupRows = 4;

// Block b of four Q4_1 rows: the scales and minimums as fp16 in the order [d0 d2 m0 m2 d1 d3 m1 m3]
// (one conversion then unpacks them into the kernels' folded-sum lanes, dot_x86_interleaved.h),
// then each row's 16 quant bytes as in its BlockQ4_1 (low nibbles elements 0..15, high 16..31).
struct BlockQ4_1x4 {
    static constexpr int kElems = kQK;  // per row
    uint16_t dm[2 * kGroupRows];
    uint8_t qs[kGroupRows][kQK / 2];
    // Where row r's scale and minimum sit in dm.
    static constexpr int d_at(int r) { return (r % 2) * 4 + r / 2; }
    static constexpr int m_at(int r) { return d_at(r) + 2; }
};
static_assert(sizeof(BlockQ4_1x4) == kGroupRows * sizeof(BlockQ4_1));

// Block b of four Q5_0 rows: the scales, each row's 5th bits (qh), then each row's nibbles.
struct BlockQ5_0x4 {
    static constexpr int kElems = kQK;  // per row
    uint16_t d[kGroupRows];
    uint8_t qh[kGroupRows][4];
    uint8_t qs[kGroupRows][kQK / 2];
};
static_assert(sizeof(BlockQ5_0x4) == kGroupRows * sizeof(BlockQ5_0));

// Block b of four Q8_0 rows: the scales, then the quants in 16-byte chunks ordered as the kernels
// load them, two rows per 256-bit register: elements 0..15 of rows 0 and 1, elements 16..31 of
// rows 0 and 1, then the same for rows 2 and 3.
struct BlockQ8_0x4 {
    static constexpr int kElems = kQK;  // per row
    uint16_t d[kGroupRows];
    int8_t qs[kGroupRows * kQK];
    // Offset in qs of row r's elements [16 * half, 16 * half + 16).
    static constexpr int chunk_at(int r, int half) {
        return (r / 2) * 2 * kQK + half * kQK + (r % 2) * (kQK / 2);
    }
};
static_assert(sizeof(BlockQ8_0x4) == kGroupRows * sizeof(BlockQ8_0));

// Whether interleave_rows() has a layout for `type` (Q4_1, Q5_0, Q8_0) and n_out rows (a multiple
// of kGroupRows). Whether a kernel reads it on this CPU is row_group_dot_fn()'s answer.
bool interleavable(GgmlType type, int64_t n_out);

// Rewrites n_out contiguous GGUF rows of n_in elements at src (row_bytes(type, n_in) apart) into
// groups at dst (the same number of bytes; not overlapping src). Throws Error when
// !interleavable(type, n_out) or n_in is not a whole number of blocks.
void interleave_rows(GgmlType type, const void* src, int64_t n_out, int64_t n_in, void* dst);

// Row `row` of an interleaved matrix back in GGUF blocks (row_bytes(type, n_in) bytes at dst).
void deinterleave_row(GgmlType type, const void* data, int64_t row, int64_t n_in, void* dst);

// The activations the group kernels read: the partner blocks of vec_dot_partner(type) (Q8_1 for
// Q4_1, Q8_0 for Q5_0 and Q8_0) with their fp16 scales widened to float when x is converted, once
// per token, so that the kernels broadcast them from memory instead of converting them for every
// row group and token (five instructions of ~26 per group block and token in the Q4_1 loop).
// The values are the fp16 ones exactly: results do not change.
struct BlockQ8_1Wide {
    float d;
    float s;
    int8_t qs[kQK];
};
struct BlockQ8_0Wide {
    float d;
    int8_t qs[kQK];
};

// Bytes of n_in activations (a whole number of blocks) in that format for `type`'s group kernels.
// Throws Error when !interleavable(type, kGroupRows) or n_in is not a whole number of blocks.
size_t group_x_row_bytes(GgmlType type, int64_t n_in);

// A partner row (quantize_partner_row's bytes for vec_dot_partner(type)) widened into dst
// (group_x_row_bytes). dst may overlap the partner row only where the row lies at its very end,
// as quantize_group_x_row() puts it.
void widen_partner_row(GgmlType type, const void* partner_row, void* dst, int64_t n_in);

// n_in floats into the group kernels' format: quantize_partner_row() then widen_partner_row(),
// in place in dst.
void quantize_group_x_row(GgmlType type, const float* x, void* dst, int64_t n_in,
                          CpuIsa isa = best_cpu_isa());

}  // namespace fluoro::cpu
