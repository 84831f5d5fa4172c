// Views of the first n rows of a preallocated activation buffer, for a batch of n tokens.
#pragma once

#include "backend/tensor_ref.h"
#include "core/error.h"

namespace fluoro {

inline Act first_rows(const Act& buffer, int64_t n) {
    if (n > buffer.rows)
        throw Error("batch of " + std::to_string(n) + " rows exceeds the reserved " +
                    std::to_string(buffer.rows));
    return Act{buffer.data, n, buffer.width};
}

}  // namespace fluoro
