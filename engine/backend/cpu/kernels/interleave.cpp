#include "backend/cpu/kernels/interleave.h"

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
    return type == GgmlType::Q4_1 && n_out > 0 && n_out % kGroupRows == 0;
}

void interleave_rows(GgmlType type, const void* src, int64_t n_out, int64_t n_in, void* dst) {
    check(type, n_out, n_in);
    const int64_t nb = n_in / kQK;
    const auto* rows = static_cast<const BlockQ4_1*>(src);
    auto* groups = static_cast<BlockQ4_1x4*>(dst);
    for (int64_t g = 0; g < n_out / kGroupRows; ++g) {
        for (int64_t b = 0; b < nb; ++b) {
            BlockQ4_1x4& out = groups[g * nb + b];
            for (int r = 0; r < kGroupRows; ++r) {
                const BlockQ4_1& in = rows[(g * kGroupRows + r) * nb + b];
                out.d[r] = in.d;
                out.m[r] = in.m;
                for (int j = 0; j < kQK / 2; ++j) out.qs[r][j] = in.qs[j];
            }
        }
    }
}

void deinterleave_row(GgmlType type, const void* data, int64_t row, int64_t n_in, void* dst) {
    check(type, kGroupRows, n_in);
    if (row < 0) throw Error("deinterleave: negative row " + std::to_string(row));
    const int64_t nb = n_in / kQK;
    const int r = static_cast<int>(row % kGroupRows);
    const auto* group = static_cast<const BlockQ4_1x4*>(data) + row / kGroupRows * nb;
    auto* out = static_cast<BlockQ4_1*>(dst);
    for (int64_t b = 0; b < nb; ++b) {
        out[b].d = group[b].d[r];
        out[b].m = group[b].m[r];
        for (int j = 0; j < kQK / 2; ++j) out[b].qs[j] = group[b].qs[r][j];
    }
}

}  // namespace fluoro::cpu
