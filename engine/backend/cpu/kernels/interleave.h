// Weight rows interleaved in groups, the CPU backend's own layout for the types whose decode
// kernel is instruction-bound in the GGUF layout. In a GGUF file each row's blocks are contiguous,
// so a row kernel converts every block's fp16 scale and minimum on its own and reduces the block's
// integer sums across a whole vector before its one multiply-add. With block b of kGroupRows
// consecutive rows stored together, one conversion handles all their scales and one multiply-add
// all their sums. Four-row groups (the first version) cut Q4_1's one-token loop from 22
// instructions per row-block to 37 per four (GCC 12), a 576x1536 matrix from cache 1.8-2.4x
// faster (fluoro_cpu_matmul_bench, Zen 3). Eight-row groups with a 32-bit lane per row (Q4_1,
// Q5_0; BlockQ4_1x8) drop the horizontal adds that folded four rows' sums: a group kernel
// microbenchmark on AVX2 (Zen 3, from cache, minimum of 7 runs) went from 10.3 to 7.5 cycles per
// four rows x 32 elements x token for one token and 7.1 to 6.0 for a tile of four (Q4_1), 17.6
// to 12.5 and 12.3 to 8.9 (Q5_0). Q8_0 (the tied output head of both default models) keeps
// four-row halves: its signed 8-bit sums need a widening per multiply either way.
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
inline constexpr int kGroupRows = 8;

// Block b of eight Q4_1 rows: the scales, the minimums (fp16, row order), then the quants in
// four 32-byte chunks, each 4 bytes from every row: qs[c][4r + j] is row r's byte 4c + j of its
// BlockQ4_1 (low nibble element 4c + j, high nibble element 16 + 4c + j). One register then
// holds 8 elements of all eight rows, one row per 32-bit lane, against 4 activation bytes
// broadcast to every lane, and a row's whole block sums into its own lane
// (dot_x86_interleaved.h).
struct BlockQ4_1x8 {
    static constexpr int kElems = kQK;  // per row
    static constexpr int kChunks = 4;
    uint16_t d[kGroupRows];
    uint16_t m[kGroupRows];
    uint8_t qs[kChunks][kGroupRows * 4];
};
static_assert(sizeof(BlockQ4_1x8) == kGroupRows * sizeof(BlockQ4_1));

// Block b of eight Q5_0 rows: the scales, then each chunk's 5th bits, then the nibbles in
// BlockQ4_1x8's chunks. qh[c][r] holds row r's 5th bits of elements 4c..4c+3 (bits 0..3) and
// 16+4c..16+4c+3 (bits 4..7); the kernels add bit << 4 to the nibble, which gives the stored
// unsigned quant q = w + 16 (0..31), and subtract 16 · Σ x (BlockQ8_0Wide::sum16) per block.
struct BlockQ5_0x8 {
    static constexpr int kElems = kQK;  // per row
    static constexpr int kChunks = 4;
    uint16_t d[kGroupRows];
    uint8_t qh[kChunks][kGroupRows];
    uint8_t qs[kChunks][kGroupRows * 4];
};
static_assert(sizeof(BlockQ5_0x8) == kGroupRows * sizeof(BlockQ5_0));

// Q8_0 group blocks are two halves of four rows each, rows 0..3 then 4..7, the AVX2 kernel running
// over one half at a time: signed 8-bit weights need the sign trick and a widening per multiply,
// which the four-row fold (dot_x86_interleaved.h) does in fewer instructions than a lane per row.
// The AVX-512 kernel reads both halves at once, one row per 128-bit lane.
inline constexpr int kHalfRows = kGroupRows / 2;

// Four Q8_0 rows' block b: the scales, then the quants in 16-byte chunks ordered as the kernels
// load them, two rows per 256-bit register: elements 0..15 of rows 0 and 1, elements 16..31 of
// rows 0 and 1, then the same for rows 2 and 3.
struct BlockQ8_0x4 {
    static constexpr int kElems = kQK;  // per row
    uint16_t d[kHalfRows];
    int8_t qs[kHalfRows * kQK];
    // Offset in qs of row r's elements [16 * half, 16 * half + 16).
    static constexpr int chunk_at(int r, int half) {
        return (r / 2) * 2 * kQK + half * kQK + (r % 2) * (kQK / 2);
    }
};
static_assert(sizeof(BlockQ8_0x4) == kHalfRows * sizeof(BlockQ8_0));

struct BlockQ8_0x8 {
    static constexpr int kElems = kQK;  // per row
    BlockQ8_0x4 half[2];
};
static_assert(sizeof(BlockQ8_0x8) == kGroupRows * sizeof(BlockQ8_0));

// Block b of eight Q4_K rows (256 elements each, 8 sub-blocks of 32 with 6-bit scales and mins).
// The 12 packed scale bytes of each row become, for all eight rows together, what one SIMD pass
// turns back into bytes (dot_x86_interleaved_k.h): entry e = 8·j + r is sub-block j of row r,
//   scm[j][r]    its scale's low 4 bits | its min's low 4 bits << 4
//   sch[e % 32]  nibble e / 32 (low, high): its scale's top 2 bits | its min's top 2 bits << 2
// and the quants, as BlockQ4_1x8's: qs[g][c][4r + i] is row r's byte 32g + 4c + i of its
// BlockQ4_K (low nibble element 64g + 4c + i, sub-block 2g; high nibble element 64g + 32 + 4c + i,
// sub-block 2g + 1). One register then holds 4 elements of all eight rows, one row per 32-bit
// lane, and a sub-block's sum forms in each row's own lane.
struct BlockQ4_Kx8 {
    static constexpr int kElems = kQK_K;  // per row
    static constexpr int kGroups = 4;     // 64 elements: two sub-blocks
    static constexpr int kChunks = 8;     // 4 bytes of every row
    uint16_t d[kGroupRows];
    uint16_t dmin[kGroupRows];
    uint8_t scm[8][kGroupRows];
    uint8_t sch[32];
    uint8_t qs[kGroups][kChunks][kGroupRows * 4];
};
static_assert(sizeof(BlockQ4_Kx8) == kGroupRows * sizeof(BlockQ4_K));

// Block b of eight Q6_K rows (256 elements each, 16 sub-blocks of 16 with signed 8-bit scales,
// 6-bit quants q with w = d · sc · (q - 32)): the scales as sc[j][r], and the quants in chunks of
// 4 bytes of every row, as BlockQ4_Kx8's: for half n (elements 128n..128n + 127) and chunk c,
//   ql[n][0][c][4r + i] = row r's ql[64n + 4c + i]       (low nibble: element 128n + 4c + i,
//                                                          high nibble: element 128n + 64 + 4c + i)
//   ql[n][1][c][4r + i] = row r's ql[64n + 32 + 4c + i]  (elements + 32 and + 96)
//   qh[n][c][4r + i]    = row r's qh[32n + 4c + i]       (their top 2 bits, in that order)
// so one unpack of three loads gives 4 elements of every row for one of the four element runs.
struct BlockQ6_Kx8 {
    static constexpr int kElems = kQK_K;  // per row
    static constexpr int kChunks = 8;
    uint16_t d[kGroupRows];
    int8_t sc[16][kGroupRows];
    uint8_t ql[2][2][kChunks][kGroupRows * 4];
    uint8_t qh[2][kChunks][kGroupRows * 4];
};
static_assert(sizeof(BlockQ6_Kx8) == kGroupRows * sizeof(BlockQ6_K));

// Whether interleave_rows() has a layout for `type` (Q4_1, Q5_0, Q8_0, Q4_K, Q6_K) and n_out rows
// (a multiple of kGroupRows). Whether a kernel reads it on this CPU is row_group_dot_fn()'s answer.
bool interleavable(GgmlType type, int64_t n_out);

// Rewrites n_out contiguous GGUF rows of n_in elements at src (row_bytes(type, n_in) apart) into
// groups at dst (the same number of bytes; not overlapping src). Throws Error when
// !interleavable(type, n_out) or n_in is not a whole number of blocks.
void interleave_rows(GgmlType type, const void* src, int64_t n_out, int64_t n_in, void* dst);

// Row `row` of an interleaved matrix back in GGUF blocks (row_bytes(type, n_in) bytes at dst).
void deinterleave_row(GgmlType type, const void* data, int64_t row, int64_t n_in, void* dst);

// The activations the group kernels read: the partner blocks of vec_dot_partner(type) (Q8_1 for
// Q4_1, Q8_0 for Q5_0 and Q8_0, Q8_K for Q4_K; Q6_K's kernels read Q8_K blocks as they are) with
// their fp16 scales widened to float when x is converted, once per token, so that the kernels
// broadcast them from memory instead of converting them for every row group and token (five
// instructions of ~26 per group block and token in the Q4_1 loop). The values are the fp16 ones
// exactly: results do not change. The Q8_0 blocks also carry their quants' sum, for the Q5_0
// kernels.
struct BlockQ8_1Wide {
    float d;
    float s;
    int8_t qs[kQK];
};
struct BlockQ8_0Wide {
    float d;
    int32_t sum16;  // 16 · Σ qs, exact: the Q5_0 kernels' correction for their unsigned quants
    int8_t qs[kQK];
    // For the AVX-512 Q8_0 kernel, which keeps each row's two partial sums (A: elements 0..7 and
    // 16..23; B: 8..15 and 24..31) in adjacent lanes: the quants as four 8-byte pairs (A's k-th
    // four, B's k-th four), elements 0..3 8..11 | 4..7 12..15 | 16..19 24..27 | 20..23 28..31;
    // and, as it multiplies w + 128 (unsigned) by x, its start values {-128 · Σ_A, -128 · Σ_B}.
    int8_t qs_ab[kQK];
    int32_t offset_ab[2];
};

// The Q4_K group kernels' activations: a Q8_K block with its 16-element sums added in pairs, so
// that sub-block j's sum is bsum32[j] (|Σ| <= 32 · 128 fits int16) and two adjacent ones load as
// one int32 (the mins term multiplies them with two rows' mins at once, vpmaddwd).
struct BlockQ8_KWide {
    float d;
    int16_t bsum32[8];
    int8_t qs[kQK_K];
};

// The activation format `type`'s group kernels read: weights of types with the same one can share
// one converted row (matmul_many). Q4_1 -> BlockQ8_1Wide; Q5_0 and Q8_0 -> BlockQ8_0Wide; Q4_K ->
// BlockQ8_KWide; Q6_K -> BlockQ8_K as it is. Throws Error for a type without a grouped layout.
enum class GroupX { Q8_1Wide, Q8_0Wide, Q8_KWide, Q8_K };
GroupX group_x_format(GgmlType type);

// Bytes of n_in activations (a whole number of blocks) in that format for `type`'s group kernels.
// Throws Error when !interleavable(type, kGroupRows) or n_in is not a whole number of blocks.
size_t group_x_row_bytes(GgmlType type, int64_t n_in);

// A partner row (quantize_partner_row's bytes for vec_dot_partner(type)) widened into dst
// (group_x_row_bytes). dst may overlap the partner row only where the row lies at its very end,
// as quantize_group_x_row() puts it, and not at all for Q4_K (its wide blocks are the shorter).
void widen_partner_row(GgmlType type, const void* partner_row, void* dst, int64_t n_in);

// n_in floats into the group kernels' format: quantize_partner_row() then widen_partner_row(),
// in place in dst.
void quantize_group_x_row(GgmlType type, const float* x, void* dst, int64_t n_in,
                          CpuIsa isa = best_cpu_isa());

}  // namespace fluoro::cpu
