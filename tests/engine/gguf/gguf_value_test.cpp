#include "gguf/gguf_value.h"

#include <gtest/gtest.h>

namespace fluoro::gguf {
namespace {

Value u32(uint64_t v) {
    return Value(ValueType::U32, ValueType::U32, v);
}

TEST(GgufValue, TypeNames) {
    EXPECT_EQ(value_type_name(ValueType::U8), "u8");
    EXPECT_EQ(value_type_name(ValueType::F64), "f64");
    EXPECT_EQ(value_type_name(ValueType::String), "string");
    EXPECT_EQ(value_type_name(static_cast<ValueType>(99)), "unknown");
}

TEST(GgufValue, ScalarsDisplayInFull) {
    EXPECT_EQ(u32(30).to_display(), "30");
    EXPECT_EQ(Value(ValueType::I8, ValueType::I8, int64_t{-5}).to_display(), "-5");
    EXPECT_EQ(Value(ValueType::F32, ValueType::F32, double{1e-5f}).to_display(), "1e-05");
    EXPECT_EQ(Value(ValueType::F64, ValueType::F64, 0.5).to_display(), "0.5");
    EXPECT_EQ(Value(ValueType::Bool, ValueType::Bool, true).to_display(), "true");
}

TEST(GgufValue, StringsAreQuotedEscapedAndCut) {
    const Value s(ValueType::String, ValueType::String, std::string("a\"b\n\x01"));
    EXPECT_EQ(s.to_display(), "\"a\\\"b\\n\\x01\"");
    const Value long_s(ValueType::String, ValueType::String, std::string(100, 'x'));
    EXPECT_EQ(long_s.to_display(10), "\"xxxxxxxxxx\"...");
    // Never cuts inside a UTF-8 sequence: "é" is 2 bytes.
    const Value utf(ValueType::String, ValueType::String, std::string("a\xC3\xA9"));
    EXPECT_EQ(utf.to_display(2), "\"a\"...");
}

TEST(GgufValue, ArraysShowTypeCountAndFirstItems) {
    const Value a(ValueType::Array, ValueType::U32, std::vector<uint64_t>{1, 2, 3});
    EXPECT_TRUE(a.is_array());
    EXPECT_EQ(a.array_size(), 3u);
    EXPECT_EQ(a.to_display(), "[u32 x 3] 1, 2, 3");
    const Value big(ValueType::Array, ValueType::I32, std::vector<int64_t>(1000, -7));
    const std::string text = big.to_display(40);
    EXPECT_EQ(text.rfind("[i32 x 1000] -7, -7", 0), 0u) << text;
    EXPECT_LE(text.size(), 45u);
    EXPECT_EQ(text.substr(text.size() - 3), "...");
    const Value strs(ValueType::Array, ValueType::String, std::vector<std::string>{"a", "b"});
    EXPECT_EQ(strs.to_display(), "[string x 2] \"a\", \"b\"");
    const Value empty(ValueType::Array, ValueType::F32, std::vector<double>{});
    EXPECT_EQ(empty.to_display(), "[f32 x 0]");
    EXPECT_EQ(u32(1).array_size(), 0u);
}

}  // namespace
}  // namespace fluoro::gguf
