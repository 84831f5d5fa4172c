// Weight rows interleaved in groups, the CPU backend's own layout for the types whose decode
// kernel is instruction-bound in the GGUF layout. In a GGUF file each row's blocks are contiguous,
// so a row kernel converts every block's fp16 scale and minimum on its own and reduces the block's
// integer sums across a whole vector before its one multiply-add. With block b of kGroupRows
// consecutive rows stored together, one conversion handles all their scales and one multiply-add
// all their sums: for Q4_1 on AVX2 the one-token loop is 38 instructions per four row-blocks where
// the GGUF-layout loop takes 22 per row-block (counted in the compiled loops, GCC 12), and a
// 576x1536 matrix from cache multiplies 1.8-2.4x faster (fluoro_cpu_matmul_bench, Zen 3).
// ggml's "repack" buffers (Q4_0 8x8, Q4_K 8x8) are the same idea.
//
// The layout is internal to the CPU backend: it interleaves at load (cpu_backend.cpp) and
// matmul() reads it through a RowGroupDotFn; get_rows() takes rows back out with
// deinterleave_row(). Same bytes in all: a group block is kGroupRows GGUF blocks, reordered.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/blocks.h"
#include "tensor/ggml_type.h"

namespace fluoro::cpu {

// Rows per interleaved group.
inline constexpr int kGroupRows = 4;

// Block b of four Q4_1 rows: the four scales, the four minimums, then each row's 16 quant bytes
// as in its BlockQ4_1 (low nibbles elements 0..15, high nibbles 16..31).
struct BlockQ4_1x4 {
    static constexpr int kElems = kQK;  // per row
    uint16_t d[kGroupRows];
    uint16_t m[kGroupRows];
    uint8_t qs[kGroupRows][kQK / 2];
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

// Whether interleave_rows() has a layout for `type` (Q4_1, Q5_0) and n_out rows (a multiple of
// kGroupRows). Whether a kernel reads it on this CPU is row_group_dot_fn()'s answer.
bool interleavable(GgmlType type, int64_t n_out);

// Rewrites n_out contiguous GGUF rows of n_in elements at src (row_bytes(type, n_in) apart) into
// groups at dst (the same number of bytes; not overlapping src). Throws Error when
// !interleavable(type, n_out) or n_in is not a whole number of blocks.
void interleave_rows(GgmlType type, const void* src, int64_t n_out, int64_t n_in, void* dst);

// Row `row` of an interleaved matrix back in GGUF blocks (row_bytes(type, n_in) bytes at dst).
void deinterleave_row(GgmlType type, const void* data, int64_t row, int64_t n_in, void* dst);

}  // namespace fluoro::cpu
