#include "backend/cpu/kernels/interleave.h"

#include <cstring>
#include <string>

#include "backend/cpu/kernels/quantize_partner.h"
#include "core/error.h"
#include "tensor/fp16.h"

namespace fluoro::cpu {
namespace {

// Elements per block of an interleavable type.
int64_t block_elems(GgmlType type) {
    return type == GgmlType::Q4_K || type == GgmlType::Q6_K ? kQK_K : kQK;
}

void check(GgmlType type, int64_t n_out, int64_t n_in) {
    if (!interleavable(type, n_out) || n_in <= 0 || n_in % block_elems(type) != 0) {
        throw Error("interleave: no grouped layout for " + std::string(type_name(type)) + " [" +
                    std::to_string(n_out) + " x " + std::to_string(n_in) + "]");
    }
}

}  // namespace

bool interleavable(GgmlType type, int64_t n_out) {
    return (type == GgmlType::Q4_1 || type == GgmlType::Q5_0 || type == GgmlType::Q8_0 ||
            type == GgmlType::Q4_K || type == GgmlType::Q6_K) &&
           n_out > 0 && n_out % kGroupRows == 0;
}

namespace {

// Row r's block <-> its part of a group block, field by field.
void move(const BlockQ4_1& in, BlockQ4_1x8& out, int r) {
    out.d[r] = in.d;
    out.m[r] = in.m;
    for (int c = 0; c < BlockQ4_1x8::kChunks; ++c) std::memcpy(&out.qs[c][4 * r], in.qs + 4 * c, 4);
}
void move(const BlockQ4_1x8& in, BlockQ4_1& out, int r) {
    out.d = in.d[r];
    out.m = in.m[r];
    for (int c = 0; c < BlockQ4_1x8::kChunks; ++c) std::memcpy(out.qs + 4 * c, &in.qs[c][4 * r], 4);
}
// BlockQ5_0's qh: bit i is element i's 5th bit.
void move(const BlockQ5_0& in, BlockQ5_0x8& out, int r) {
    uint32_t qh;
    std::memcpy(&qh, in.qh, sizeof(qh));
    out.d[r] = in.d;
    for (int c = 0; c < BlockQ5_0x8::kChunks; ++c) {
        out.qh[c][r] = uint8_t(((qh >> (4 * c)) & 0xF) | (((qh >> (16 + 4 * c)) & 0xF) << 4));
        std::memcpy(&out.qs[c][4 * r], in.qs + 4 * c, 4);
    }
}
void move(const BlockQ5_0x8& in, BlockQ5_0& out, int r) {
    uint32_t qh = 0;
    out.d = in.d[r];
    for (int c = 0; c < BlockQ5_0x8::kChunks; ++c) {
        qh |= uint32_t(in.qh[c][r] & 0xF) << (4 * c) | uint32_t(in.qh[c][r] >> 4) << (16 + 4 * c);
        std::memcpy(out.qs + 4 * c, &in.qs[c][4 * r], 4);
    }
    std::memcpy(out.qh, &qh, sizeof(qh));
}

void move(const BlockQ8_0& in, BlockQ8_0x4& out, int r) {
    out.d[r] = in.d;
    for (int half = 0; half < 2; ++half)
        std::memcpy(out.qs + BlockQ8_0x4::chunk_at(r, half), in.qs + half * (kQK / 2), kQK / 2);
}
void move(const BlockQ8_0x4& in, BlockQ8_0& out, int r) {
    out.d = in.d[r];
    for (int half = 0; half < 2; ++half)
        std::memcpy(out.qs + half * (kQK / 2), in.qs + BlockQ8_0x4::chunk_at(r, half), kQK / 2);
}

// Rows 0..3 in the first half, 4..7 in the second.
void move(const BlockQ8_0& in, BlockQ8_0x8& out, int r) {
    move(in, out.half[r / kHalfRows], r % kHalfRows);
}
void move(const BlockQ8_0x8& in, BlockQ8_0& out, int r) {
    move(in.half[r / kHalfRows], out, r % kHalfRows);
}

// The inverse of k4_scale_min (tensor/blocks.h): eight 6-bit scales and mins into 12 bytes.
void pack_k4(const uint8_t* sc, const uint8_t* mn, uint8_t* s) {
    for (int j = 0; j < 4; ++j) {
        s[j] = uint8_t(sc[j] | (sc[j + 4] >> 4) << 6);
        s[j + 4] = uint8_t(mn[j] | (mn[j + 4] >> 4) << 6);
        s[j + 8] = uint8_t((sc[j + 4] & 0x0F) | (mn[j + 4] & 0x0F) << 4);
    }
}

void move(const BlockQ4_K& in, BlockQ4_Kx8& out, int r) {
    out.d[r] = in.d;
    out.dmin[r] = in.dmin;
    uint8_t sc[8], mn[8];
    for (int j = 0; j < 8; ++j) {
        const K4ScaleMin sm = k4_scale_min(in.scales, j);
        sc[j] = uint8_t(sm.scale);
        mn[j] = uint8_t(sm.min);
    }
    const auto top = [&](int j) { return uint8_t((sc[j] >> 4) | (mn[j] >> 4) << 2); };
    for (int j = 0; j < 8; ++j) out.scm[j][r] = uint8_t((sc[j] & 0x0F) | (mn[j] & 0x0F) << 4);
    // entries 8j + r and 8(j + 4) + r share byte 8j + r: both this row's
    for (int j = 0; j < 4; ++j) out.sch[8 * j + r] = uint8_t(top(j) | top(j + 4) << 4);
    for (int g = 0; g < BlockQ4_Kx8::kGroups; ++g)
        for (int c = 0; c < BlockQ4_Kx8::kChunks; ++c)
            std::memcpy(&out.qs[g][c][4 * r], in.qs + 32 * g + 4 * c, 4);
}
void move(const BlockQ4_Kx8& in, BlockQ4_K& out, int r) {
    out.d = in.d[r];
    out.dmin = in.dmin[r];
    uint8_t sc[8], mn[8];
    for (int j = 0; j < 8; ++j) {
        const int e = 8 * j + r;
        const uint8_t top = uint8_t(in.sch[e % 32] >> (4 * (e / 32)));
        sc[j] = uint8_t((in.scm[j][r] & 0x0F) | (top & 3) << 4);
        mn[j] = uint8_t((in.scm[j][r] >> 4) | ((top >> 2) & 3) << 4);
    }
    pack_k4(sc, mn, out.scales);
    for (int g = 0; g < BlockQ4_Kx8::kGroups; ++g)
        for (int c = 0; c < BlockQ4_Kx8::kChunks; ++c)
            std::memcpy(out.qs + 32 * g + 4 * c, &in.qs[g][c][4 * r], 4);
}

void move(const BlockQ6_K& in, BlockQ6_Kx8& out, int r) {
    out.d[r] = in.d;
    for (int j = 0; j < 16; ++j) out.sc[j][r] = in.scales[j];
    for (int n = 0; n < 2; ++n)
        for (int c = 0; c < BlockQ6_Kx8::kChunks; ++c) {
            std::memcpy(&out.ql[n][0][c][4 * r], in.ql + 64 * n + 4 * c, 4);
            std::memcpy(&out.ql[n][1][c][4 * r], in.ql + 64 * n + 32 + 4 * c, 4);
            std::memcpy(&out.qh[n][c][4 * r], in.qh + 32 * n + 4 * c, 4);
        }
}
void move(const BlockQ6_Kx8& in, BlockQ6_K& out, int r) {
    out.d = in.d[r];
    for (int j = 0; j < 16; ++j) out.scales[j] = in.sc[j][r];
    for (int n = 0; n < 2; ++n)
        for (int c = 0; c < BlockQ6_Kx8::kChunks; ++c) {
            std::memcpy(out.ql + 64 * n + 4 * c, &in.ql[n][0][c][4 * r], 4);
            std::memcpy(out.ql + 64 * n + 32 + 4 * c, &in.ql[n][1][c][4 * r], 4);
            std::memcpy(out.qh + 32 * n + 4 * c, &in.qh[n][c][4 * r], 4);
        }
}

template <class Block, class Group>
void interleave_as(const void* src, int64_t n_out, int64_t nb, void* dst) {
    const auto* rows = static_cast<const Block*>(src);
    auto* groups = static_cast<Group*>(dst);
    for (int64_t g = 0; g < n_out / kGroupRows; ++g)
        for (int64_t b = 0; b < nb; ++b)
            for (int r = 0; r < kGroupRows; ++r)
                move(rows[(g * kGroupRows + r) * nb + b], groups[g * nb + b], r);
}

template <class Block, class Group>
void deinterleave_as(const void* data, int64_t row, int64_t nb, void* dst) {
    const auto* group = static_cast<const Group*>(data) + row / kGroupRows * nb;
    auto* out = static_cast<Block*>(dst);
    for (int64_t b = 0; b < nb; ++b) move(group[b], out[b], static_cast<int>(row % kGroupRows));
}

}  // namespace

void interleave_rows(GgmlType type, const void* src, int64_t n_out, int64_t n_in, void* dst) {
    check(type, n_out, n_in);
    const int64_t nb = n_in / block_elems(type);
    if (type == GgmlType::Q4_K) return interleave_as<BlockQ4_K, BlockQ4_Kx8>(src, n_out, nb, dst);
    if (type == GgmlType::Q6_K) return interleave_as<BlockQ6_K, BlockQ6_Kx8>(src, n_out, nb, dst);
    if (type == GgmlType::Q4_1) return interleave_as<BlockQ4_1, BlockQ4_1x8>(src, n_out, nb, dst);
    if (type == GgmlType::Q8_0) return interleave_as<BlockQ8_0, BlockQ8_0x8>(src, n_out, nb, dst);
    interleave_as<BlockQ5_0, BlockQ5_0x8>(src, n_out, nb, dst);
}

void deinterleave_row(GgmlType type, const void* data, int64_t row, int64_t n_in, void* dst) {
    check(type, kGroupRows, n_in);
    if (row < 0) throw Error("deinterleave: negative row " + std::to_string(row));
    const int64_t nb = n_in / block_elems(type);
    if (type == GgmlType::Q4_K) return deinterleave_as<BlockQ4_K, BlockQ4_Kx8>(data, row, nb, dst);
    if (type == GgmlType::Q6_K) return deinterleave_as<BlockQ6_K, BlockQ6_Kx8>(data, row, nb, dst);
    if (type == GgmlType::Q4_1) return deinterleave_as<BlockQ4_1, BlockQ4_1x8>(data, row, nb, dst);
    if (type == GgmlType::Q8_0) return deinterleave_as<BlockQ8_0, BlockQ8_0x8>(data, row, nb, dst);
    deinterleave_as<BlockQ5_0, BlockQ5_0x8>(data, row, nb, dst);
}

namespace {

void widen(const BlockQ8_1& in, BlockQ8_1Wide& out) {
    out.d = fp16_to_fp32(in.d);
    out.s = fp16_to_fp32(in.s);
    std::memcpy(out.qs, in.qs, sizeof(out.qs));
}
void widen(const BlockQ8_0& in, BlockQ8_0Wide& out) {
    out.d = fp16_to_fp32(in.d);
    int32_t sum = 0;
    for (const int8_t q : in.qs) sum += q;
    out.sum16 = 16 * sum;
    std::memcpy(out.qs, in.qs, sizeof(out.qs));
    // Pair k: A's elements {0, 4, 16, 20}[k] + 0..3, then B's, 8 further on.
    constexpr int kAStart[4] = {0, 4, 16, 20};
    int32_t a = 0;
    for (int k = 0; k < 4; ++k) {
        std::memcpy(out.qs_ab + 8 * k, in.qs + kAStart[k], 4);
        std::memcpy(out.qs_ab + 8 * k + 4, in.qs + kAStart[k] + 8, 4);
        for (int i = 0; i < 4; ++i) a += in.qs[kAStart[k] + i];
    }
    out.offset_ab[0] = -128 * a;
    out.offset_ab[1] = -128 * (sum - a);
}

void widen(const BlockQ8_K& in, BlockQ8_KWide& out) {
    out.d = in.d;
    for (int j = 0; j < 8; ++j) out.bsum32[j] = int16_t(in.bsums[2 * j] + in.bsums[2 * j + 1]);
    std::memcpy(out.qs, in.qs, sizeof(out.qs));
}

// Block by block into a separate dst (Q8_K's wide blocks are the shorter).
void widen_q8_k(const void* src, void* dst, int64_t nb) {
    for (int64_t b = 0; b < nb; ++b) {
        BlockQ8_K in;
        std::memcpy(&in, static_cast<const std::byte*>(src) + b * int64_t(sizeof(in)), sizeof(in));
        BlockQ8_KWide out;
        widen(in, out);
        std::memcpy(static_cast<std::byte*>(dst) + b * int64_t(sizeof(out)), &out, sizeof(out));
    }
}

// Forward, each block copied out before its wider form is written: with the partner row at the
// end of dst, wide block b ends at or before narrow block b + 1 starts.
template <class Narrow, class Wide>
void widen_as(const void* src, void* dst, int64_t nb) {
    static_assert(sizeof(Wide) > sizeof(Narrow));
    for (int64_t b = 0; b < nb; ++b) {
        Narrow in;
        std::memcpy(&in, static_cast<const std::byte*>(src) + b * int64_t(sizeof(Narrow)),
                    sizeof(in));
        Wide out;
        widen(in, out);
        std::memcpy(static_cast<std::byte*>(dst) + b * int64_t(sizeof(Wide)), &out, sizeof(out));
    }
}

}  // namespace

GroupX group_x_format(GgmlType type) {
    check(type, kGroupRows, block_elems(type));
    switch (type) {
        case GgmlType::Q4_1:
            return GroupX::Q8_1Wide;
        case GgmlType::Q4_K:
            return GroupX::Q8_KWide;
        case GgmlType::Q6_K:
            return GroupX::Q8_K;
        default:
            return GroupX::Q8_0Wide;
    }
}

size_t group_x_row_bytes(GgmlType type, int64_t n_in) {
    check(type, kGroupRows, n_in);
    const size_t nb = size_t(n_in / block_elems(type));
    if (type == GgmlType::Q4_K) return nb * sizeof(BlockQ8_KWide);
    if (type == GgmlType::Q6_K) return nb * sizeof(BlockQ8_K);
    return nb * (type == GgmlType::Q4_1 ? sizeof(BlockQ8_1Wide) : sizeof(BlockQ8_0Wide));
}

void widen_partner_row(GgmlType type, const void* partner_row, void* dst, int64_t n_in) {
    check(type, kGroupRows, n_in);
    if (type == GgmlType::Q4_K) return widen_q8_k(partner_row, dst, n_in / kQK_K);
    if (type == GgmlType::Q6_K) {  // read as they are
        if (dst != partner_row) std::memmove(dst, partner_row, group_x_row_bytes(type, n_in));
        return;
    }
    if (type == GgmlType::Q4_1)
        return widen_as<BlockQ8_1, BlockQ8_1Wide>(partner_row, dst, n_in / kQK);
    widen_as<BlockQ8_0, BlockQ8_0Wide>(partner_row, dst, n_in / kQK);
}

void quantize_group_x_row(GgmlType type, const float* x, void* dst, int64_t n_in, CpuIsa isa) {
    if (type == GgmlType::Q6_K) {
        check(type, kGroupRows, n_in);
        return quantize_partner_row(GgmlType::Q8_K, x, dst, n_in, isa);
    }
    if (type == GgmlType::Q4_K) {  // a block at a time through a Q8_K block on the stack
        check(type, kGroupRows, n_in);
        for (int64_t b = 0; b < n_in / kQK_K; ++b) {
            BlockQ8_K narrow;
            quantize_partner_row(GgmlType::Q8_K, x + b * kQK_K, &narrow, kQK_K, isa);
            widen_q8_k(&narrow, static_cast<BlockQ8_KWide*>(dst) + b, 1);
        }
        return;
    }
    if (isa != CpuIsa::Generic && detail::quantize_x86_compiled() && cpu_isa_supported(isa)) {
        check(type, kGroupRows, n_in);
        // One pass, the same bytes as the two steps below (tests compare them).
        if (type == GgmlType::Q4_1) return detail::quantize_q8_1_wide_avx2(x, dst, n_in / kQK);
        return detail::quantize_q8_0_wide_avx2(x, dst, n_in / kQK);
    }
    const GgmlType partner = vec_dot_partner(type);
    const size_t wide = group_x_row_bytes(type, n_in);
    const size_t narrow = *row_bytes(partner, static_cast<uint64_t>(n_in));
    std::byte* tail = static_cast<std::byte*>(dst) + (wide - narrow);
    quantize_partner_row(partner, x, tail, n_in, isa);
    widen_partner_row(type, tail, dst, n_in);
}

}  // namespace fluoro::cpu
