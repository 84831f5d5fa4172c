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

}  // namespace fluoro
