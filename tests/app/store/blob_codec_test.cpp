// The attention blob (app/store/blob_codec.h) read back from a database that is not trusted: a
// shape its weights do not fill is a StoreError (SQLITE_CORRUPT), including the shapes whose
// element count wraps in 64 bits or is zero while the row count is not.
#include "store/blob_codec.h"

#include <gtest/gtest.h>

#include <tuple>

#include "store/sqlite_db.h"

namespace fluoro::app {
namespace {

AttentionSnapshot snapshot(int64_t rows, int64_t cols, size_t weights) {
    AttentionSnapshot s;
    s.layer = 1;
    s.head = 2;
    s.first_row = 5;
    s.n_rows = rows;
    s.n_cols = cols;
    s.weights.assign(weights, 0.25f);
    return s;
}

TEST(BlobCodec, AttentionRoundTripsAndRefusesShapesItsWeightsDoNotFill) {
    AttentionSnapshot back;
    decode_attention(encode_attention(snapshot(2, 3, 6)), back);
    EXPECT_EQ(back.n_rows, 2);
    EXPECT_EQ(back.n_cols, 3);
    EXPECT_EQ(back.weights.size(), 6u);
    EXPECT_EQ(back.first_row, 5);
    const int64_t big = int64_t(1) << 32;
    for (const auto& [rows, cols, n] :
         {std::tuple{big, big, size_t(0)},  // 2^64 wraps to 0
          std::tuple{big, int64_t(0), size_t(0)}, std::tuple{int64_t(2), int64_t(3), size_t(5)},
          std::tuple{int64_t(-2), int64_t(-3), size_t(6)}}) {
        AttentionSnapshot s;
        try {
            decode_attention(encode_attention(snapshot(rows, cols, n)), s);
            ADD_FAILURE() << rows << " x " << cols << " with " << n << " weights decoded";
        } catch (const StoreError& e) {
            EXPECT_EQ(e.code(), SQLITE_CORRUPT);
            EXPECT_NE(std::string(e.what()).find("does not match"), std::string::npos) << e.what();
        }
    }
}

}  // namespace
}  // namespace fluoro::app
