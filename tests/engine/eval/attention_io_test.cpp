// FlashAttention's IO claim's mechanics (eval/attention_io.h): the three paths compute the same
// attention (to 1e-4: float sums in another order over at most n terms of magnitude ≤ 1 differ
// near √n · 2⁻²⁴ ≈ 1e-6 at n = 200, so 1e-4 fails only a real mistake), the naive path allocates
// the n × n matrix, the row path one row, the flash path a constant, and the counted bytes follow
// the loops (a causal triangle of n(n+1)/2 scores; K/V per query, or per 16-query tile).
#include "eval/attention_io.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace fluoro {
namespace {

TEST(AttentionIo, ThreePathsAgreeAndCountWhatTheirLoopsMove) {
    const int64_t ns[] = {1, 17, 200};
    const std::vector<AttentionIoPoint> pts = measure_attention_io(ns);
    ASSERT_EQ(pts.size(), 3u);
    for (const AttentionIoPoint& p : pts) {
        const uint64_t n = uint64_t(p.n), tri = n * (n + 1) / 2;
        EXPECT_LE(p.max_diff_rowwise, 1e-4f) << n;
        EXPECT_LE(p.max_diff_flash, 1e-4f) << n;
        EXPECT_EQ(p.naive.extra_bytes, n * n * 4) << n;
        EXPECT_EQ(p.rowwise.extra_bytes, n * 4) << n;
        EXPECT_EQ(p.flash.extra_bytes,
                  uint64_t(2 * kFlashQueryTile + kFlashQueryTile * kAttentionIoHeadDim +
                           kFlashQueryTile * kFlashKeyTile) *
                      4)
            << n;
        EXPECT_EQ(p.naive.score_bytes, 7 * tri * 4) << n;
        EXPECT_EQ(p.rowwise.score_bytes, 4 * tri * 4) << n;
        EXPECT_EQ(p.flash.score_bytes, 2 * tri * 4) << n;
        EXPECT_EQ(p.naive.kv_bytes, 2 * tri * uint64_t(kAttentionIoHeadDim) * 4) << n;
        EXPECT_LE(p.flash.kv_bytes, p.naive.kv_bytes) << n;
    }
    // n = 200: query tiles of 16 read key rows up to their last query: Σ over 13 tiles of
    // min(200, 16 (t + 1)) rows, K and V.
    uint64_t rows = 0;
    for (int64_t t = 0; t * 16 < 200; ++t) rows += uint64_t(std::min<int64_t>(200, 16 * (t + 1)));
    EXPECT_EQ(pts[2].flash.kv_bytes, 2 * rows * uint64_t(kAttentionIoHeadDim) * 4);
    const int64_t bad[] = {0};
    EXPECT_THROW(measure_attention_io(bad), Error);
}

}  // namespace
}  // namespace fluoro
