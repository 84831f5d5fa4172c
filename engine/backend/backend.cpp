#include "backend/backend.h"

#include <string>

#include "core/error.h"

namespace fluoro {

void Backend::check_add_rows_scaled(const Act& x, const Act& y, std::span<const int32_t> rows,
                                    std::span<const float> scales) {
    if (x.width != y.width || int64_t(rows.size()) != y.rows || scales.size() != rows.size())
        throw Error("add_rows_scaled: " + std::to_string(y.rows) + " rows of width " +
                    std::to_string(y.width) + " with " + std::to_string(rows.size()) +
                    " row indices and " + std::to_string(scales.size()) +
                    " scales into rows of width " + std::to_string(x.width));
    for (const int32_t r : rows)
        if (r < 0 || r >= x.rows)
            throw Error("add_rows_scaled: row " + std::to_string(r) + " outside the " +
                        std::to_string(x.rows) + " rows of the output");
}

void check_block_copy(const char* backend, const Act& x, const Act& y, const BlockCopy& c) {
    const auto reach = [&](int64_t offset, int64_t stride) {
        return offset + (c.n_blocks - 1) * stride + c.width;
    };
    if (c.width < 0 || c.n_blocks < 1 || c.x_offset < 0 || c.x_stride < 0 || c.y_offset < 0 ||
        c.y_stride < 0 || x.rows != y.rows || reach(c.x_offset, c.x_stride) > x.width ||
        reach(c.y_offset, c.y_stride) > y.width)
        throw Error(std::string(backend) + ": copy_blocks: " + std::to_string(c.n_blocks) +
                    " blocks of " + std::to_string(c.width) + " (x at " +
                    std::to_string(c.x_offset) + " + b * " + std::to_string(c.x_stride) +
                    ", y at " + std::to_string(c.y_offset) + " + b * " +
                    std::to_string(c.y_stride) + ") between " + std::to_string(x.rows) + " x " +
                    std::to_string(x.width) + " and " + std::to_string(y.rows) + " x " +
                    std::to_string(y.width));
}

}  // namespace fluoro
