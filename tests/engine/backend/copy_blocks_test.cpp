// Backend::copy_blocks on the CPU: each block lands where BlockCopy says, nothing else in y is
// touched, a stride of 0 repeats one block, and a block reaching past a row is refused by name
// (the CUDA kernel is held to this one in tests/cuda/cuda_ops_test.cpp).
#include <gtest/gtest.h>

#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"

namespace fluoro {
namespace {

TEST(CopyBlocks, EachBlockLandsWhereItSaysAndNothingElseMoves) {
    cpu::CpuBackend be(2);
    // Two rows of 3 heads of [nope 2, rope 1]; pull the rope dim of each head to the front of
    // blocks of 4, and repeat x's column 5 into every block's last place.
    const int64_t rows = 2, xw = 9, yw = 12;
    std::vector<float> x(size_t(rows * xw)), y(size_t(rows * yw), -1.0f);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);
    const Act xa{x.data(), rows, xw}, ya{y.data(), rows, yw};
    be.copy_blocks(xa, ya, BlockCopy{1, 3, 2, 3, 0, 4});
    be.copy_blocks(xa, ya, BlockCopy{1, 3, 5, 0, 3, 4});
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t b = 0; b < 3; ++b) {
            const float* yb = y.data() + r * yw + b * 4;
            EXPECT_EQ(yb[0], x[size_t(r * xw + b * 3 + 2)]);
            EXPECT_EQ(yb[1], -1.0f);
            EXPECT_EQ(yb[2], -1.0f);
            EXPECT_EQ(yb[3], x[size_t(r * xw + 5)]);
        }
}

TEST(CopyBlocks, ABlockPastARowIsRefused) {
    cpu::CpuBackend be(1);
    std::vector<float> x(8), y(8);
    const Act xa{x.data(), 2, 4}, ya{y.data(), 2, 4};
    EXPECT_THROW(be.copy_blocks(xa, ya, BlockCopy{2, 2, 1, 2, 0, 2}), Error);  // x: 1 + 2 + 2 > 4
    EXPECT_THROW(be.copy_blocks(xa, ya, BlockCopy{3, 2, 0, 0, 0, 2}), Error);  // y: 2 + 3 > 4
    EXPECT_THROW(be.copy_blocks(xa, Act{y.data(), 1, 4}, BlockCopy{1, 1, 0, 0, 0, 0}), Error);
    EXPECT_NO_THROW(be.copy_blocks(xa, ya, BlockCopy{2, 2, 0, 2, 0, 2}));
    EXPECT_EQ(y, x);
}

}  // namespace
}  // namespace fluoro
