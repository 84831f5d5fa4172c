#include "backend/cpu/kernels/interleave.h"

#include <cstring>
#include <string>

#include "core/error.h"

namespace fluoro::cpu {
namespace {

void check(GgmlType type, int64_t n_out, int64_t n_in) {
    if (!interleavable(type, n_out) || n_in <= 0 || n_in % kQK != 0) {
        throw Error("interleave: no grouped layout for " + std::string(type_name(type)) + " [" +
                    std::to_string(n_out) + " x " + std::to_string(n_in) + "]");
    }
}

}  // namespace

bool interleavable(GgmlType type, int64_t n_out) {
    return (type == GgmlType::Q4_1 || type == GgmlType::Q5_0) && n_out > 0 &&
           n_out % kGroupRows == 0;
}

namespace {

// Row r's block <-> its part of a group block, field by field.
void move(const BlockQ4_1& in, BlockQ4_1x4& out, int r) {
    out.d[r] = in.d;
    out.m[r] = in.m;
    std::memcpy(out.qs[r], in.qs, sizeof(in.qs));
}
void move(const BlockQ4_1x4& in, BlockQ4_1& out, int r) {
    out.d = in.d[r];
    out.m = in.m[r];
    std::memcpy(out.qs, in.qs[r], sizeof(out.qs));
}
void move(const BlockQ5_0& in, BlockQ5_0x4& out, int r) {
    out.d[r] = in.d;
    std::memcpy(out.qh[r], in.qh, sizeof(in.qh));
    std::memcpy(out.qs[r], in.qs, sizeof(in.qs));
}
void move(const BlockQ5_0x4& in, BlockQ5_0& out, int r) {
    out.d = in.d[r];
    std::memcpy(out.qh, in.qh[r], sizeof(out.qh));
    std::memcpy(out.qs, in.qs[r], sizeof(out.qs));
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
    if (type == GgmlType::Q4_1)
        return interleave_as<BlockQ4_1, BlockQ4_1x4>(src, n_out, n_in / kQK, dst);
    interleave_as<BlockQ5_0, BlockQ5_0x4>(src, n_out, n_in / kQK, dst);
}

void deinterleave_row(GgmlType type, const void* data, int64_t row, int64_t n_in, void* dst) {
    check(type, kGroupRows, n_in);
    if (row < 0) throw Error("deinterleave: negative row " + std::to_string(row));
    if (type == GgmlType::Q4_1)
        return deinterleave_as<BlockQ4_1, BlockQ4_1x4>(data, row, n_in / kQK, dst);
    deinterleave_as<BlockQ5_0, BlockQ5_0x4>(data, row, n_in / kQK, dst);
}

}  // namespace fluoro::cpu
