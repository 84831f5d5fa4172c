// AttentionSnapshot::shape_ok (telemetry/events.h): true exactly when the weights hold n_rows x
// n_cols values, with the products that overflow 64 bits and the empty shapes spelled out.
#include "telemetry/events.h"

#include <gtest/gtest.h>

namespace fluoro {
namespace {

bool ok(int64_t rows, int64_t cols, size_t n) {
    AttentionSnapshot s;
    s.n_rows = rows;
    s.n_cols = cols;
    s.weights.assign(n, 0.0f);
    return s.shape_ok();
}

TEST(AttentionSnapshot, ShapeOkOnlyWhenTheWeightsFillIt) {
    EXPECT_TRUE(ok(2, 3, 6));
    EXPECT_TRUE(ok(1, 1, 1));
    EXPECT_TRUE(ok(0, 0, 0));
    EXPECT_TRUE(ok(0, 7, 0));  // no rows of 7 columns: nothing to walk
    EXPECT_FALSE(ok(2, 3, 5));
    EXPECT_FALSE(ok(2, 3, 7));
    EXPECT_FALSE(ok(3, 2, 7));
    EXPECT_FALSE(ok(-1, -6, 6));
    EXPECT_FALSE(ok(int64_t(1) << 32, int64_t(1) << 32, 0));  // 2^64: 0 when multiplied
    EXPECT_FALSE(ok(int64_t(1) << 32, 0, 0));                 // 2^32 empty rows
    EXPECT_FALSE(ok((int64_t(1) << 62) + 1, 4, 4));           // (2^62 + 1) * 4 wraps to 4
}

}  // namespace
}  // namespace fluoro
