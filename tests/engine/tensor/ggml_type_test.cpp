#include "tensor/ggml_type.h"

#include <gtest/gtest.h>

namespace fluoro {
namespace {

TEST(GgmlType, KnownGeometry) {
    EXPECT_EQ(type_traits(GgmlType::Q4_K).block_bytes, 144u);
    EXPECT_EQ(type_traits(GgmlType::Q6_K).block_bytes, 210u);
    EXPECT_EQ(type_traits(GgmlType::Q8_0).block_elems, 32u);
    EXPECT_EQ(type_name(GgmlType::BF16), "bf16");
}

TEST(GgmlType, UnknownIdsAreNamed) {
    EXPECT_EQ(find_type_traits(4), nullptr);  // removed Q4_2
    EXPECT_EQ(find_type_traits(999), nullptr);
    EXPECT_EQ(describe_raw_type(999), "type 999 (unknown to ggml)");
}

TEST(GgmlType, RowBytesChecksBlocksAndOverflow) {
    EXPECT_EQ(row_bytes(GgmlType::Q4_1, 576), 18u * 20u);
    EXPECT_FALSE(row_bytes(GgmlType::Q4_K, 640).has_value());  // not a multiple of 256
    EXPECT_FALSE(row_bytes(GgmlType::F32, UINT64_MAX / 2).has_value());
}

}  // namespace
}  // namespace fluoro
