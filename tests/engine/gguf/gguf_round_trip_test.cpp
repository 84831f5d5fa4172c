// Writer -> reader round trips: every value type, arrays, versions, alignments, tensors.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace fluoro::gguf {
namespace {

GgufFile round_trip(const GgufWriter& w) {
    const std::vector<std::byte> image = w.to_bytes();
    return GgufFile::parse(image, "round_trip.gguf");
}

template <typename T>
const T& storage_of(const GgufFile& f, std::string_view key) {
    const Value* v = f.find(key);
    EXPECT_NE(v, nullptr) << key;
    return std::get<T>(v->storage());
}

TEST(GgufRoundTrip, EveryScalarTypeAtItsLimits) {
    GgufWriter w;
    w.add_u8("u8", 255);
    w.add_i8("i8", -128);
    w.add_u16("u16", 65535);
    w.add_i16("i16", -32768);
    w.add_u32("u32", 0xFFFFFFFFu);
    w.add_i32("i32", std::numeric_limits<int32_t>::min());
    w.add_u64("u64", std::numeric_limits<uint64_t>::max());
    w.add_i64("i64", std::numeric_limits<int64_t>::min());
    w.add_f32("f32", 1.5e-5f);
    w.add_f64("f64", -2.25e300);
    w.add_bool("bool_t", true);
    w.add_bool("bool_f", false);
    w.add_string("str", "héllo ▁ world");
    w.add_string("empty_str", "");
    const GgufFile f = round_trip(w);
    ASSERT_EQ(f.metadata().size(), 14u);
    EXPECT_EQ(f.metadata()[0].key, "u8");  // file order kept
    EXPECT_EQ(f.find("u8")->type(), ValueType::U8);
    EXPECT_EQ(storage_of<uint64_t>(f, "u8"), 255u);
    EXPECT_EQ(storage_of<int64_t>(f, "i8"), -128);
    EXPECT_EQ(storage_of<uint64_t>(f, "u16"), 65535u);
    EXPECT_EQ(storage_of<int64_t>(f, "i16"), -32768);
    EXPECT_EQ(storage_of<uint64_t>(f, "u32"), 0xFFFFFFFFu);
    EXPECT_EQ(storage_of<int64_t>(f, "i32"), std::numeric_limits<int32_t>::min());
    EXPECT_EQ(storage_of<uint64_t>(f, "u64"), std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(storage_of<int64_t>(f, "i64"), std::numeric_limits<int64_t>::min());
    EXPECT_EQ(storage_of<double>(f, "f32"), double{1.5e-5f});
    EXPECT_EQ(f.find("f32")->type(), ValueType::F32);
    EXPECT_EQ(storage_of<double>(f, "f64"), -2.25e300);
    EXPECT_TRUE(storage_of<bool>(f, "bool_t"));
    EXPECT_FALSE(storage_of<bool>(f, "bool_f"));
    EXPECT_EQ(storage_of<std::string>(f, "str"), "héllo ▁ world");
    EXPECT_EQ(storage_of<std::string>(f, "empty_str"), "");
    EXPECT_EQ(f.find("missing"), nullptr);
}

TEST(GgufRoundTrip, ArraysOfEveryElementTypeIncludingEmpty) {
    GgufWriter w;
    const auto arr = [](ValueType t, Value::Storage s) { return Value(ValueType::Array, t, s); };
    w.add("a_u8", arr(ValueType::U8, std::vector<uint64_t>{0, 255}));
    w.add("a_i8", arr(ValueType::I8, std::vector<int64_t>{-128, 127}));
    w.add("a_u16", arr(ValueType::U16, std::vector<uint64_t>{1, 65535}));
    w.add("a_i16", arr(ValueType::I16, std::vector<int64_t>{-32768}));
    w.add("a_u64", arr(ValueType::U64, std::vector<uint64_t>{~0ull}));
    w.add("a_i64", arr(ValueType::I64, std::vector<int64_t>{-1, 1}));
    w.add("a_f64", arr(ValueType::F64, std::vector<double>{0.125, -8.0}));
    w.add("a_bool", arr(ValueType::Bool, std::vector<bool>{true, false, true}));
    const std::vector<float> f32 = {1.0f, -0.5f};
    const std::vector<int32_t> i32 = {-3, 4};
    const std::vector<uint32_t> u32 = {7, 8, 9};
    w.add_f32_array("a_f32", f32);
    w.add_i32_array("a_i32", i32);
    w.add_u32_array("a_u32", u32);
    w.add_string_array("a_str", {"", "Ġthe", "<0x0A>"});
    w.add_string_array("empty_str_array", {});
    w.add("empty_u8_array", arr(ValueType::U8, std::vector<uint64_t>{}));
    const GgufFile f = round_trip(w);
    EXPECT_EQ(storage_of<std::vector<uint64_t>>(f, "a_u8"), (std::vector<uint64_t>{0, 255}));
    EXPECT_EQ(storage_of<std::vector<int64_t>>(f, "a_i8"), (std::vector<int64_t>{-128, 127}));
    EXPECT_EQ(storage_of<std::vector<uint64_t>>(f, "a_u16"), (std::vector<uint64_t>{1, 65535}));
    EXPECT_EQ(storage_of<std::vector<int64_t>>(f, "a_i16"), (std::vector<int64_t>{-32768}));
    EXPECT_EQ(storage_of<std::vector<uint64_t>>(f, "a_u64"), (std::vector<uint64_t>{~0ull}));
    EXPECT_EQ(storage_of<std::vector<int64_t>>(f, "a_i64"), (std::vector<int64_t>{-1, 1}));
    EXPECT_EQ(storage_of<std::vector<double>>(f, "a_f64"), (std::vector<double>{0.125, -8.0}));
    EXPECT_EQ(storage_of<std::vector<bool>>(f, "a_bool"), (std::vector<bool>{true, false, true}));
    EXPECT_EQ(storage_of<std::vector<double>>(f, "a_f32"), (std::vector<double>{1.0, -0.5}));
    EXPECT_EQ(storage_of<std::vector<int64_t>>(f, "a_i32"), (std::vector<int64_t>{-3, 4}));
    EXPECT_EQ(storage_of<std::vector<uint64_t>>(f, "a_u32"), (std::vector<uint64_t>{7, 8, 9}));
    EXPECT_EQ(storage_of<std::vector<std::string>>(f, "a_str"),
              (std::vector<std::string>{"", "Ġthe", "<0x0A>"}));
    EXPECT_EQ(f.find("a_str")->elem_type(), ValueType::String);
    EXPECT_EQ(f.find("a_u16")->elem_type(), ValueType::U16);
    EXPECT_EQ(f.find("empty_str_array")->array_size(), 0u);
    EXPECT_EQ(f.find("empty_u8_array")->array_size(), 0u);
    EXPECT_EQ(f.find("empty_u8_array")->elem_type(), ValueType::U8);
}

TEST(GgufRoundTrip, Versions2And3) {
    for (const uint32_t version : {2u, 3u}) {
        GgufWriter w(version);
        w.add_u32("k", 1);
        const GgufFile f = round_trip(w);
        EXPECT_EQ(f.version(), version);
        EXPECT_EQ(f.get_uint("k"), 1u);
    }
    EXPECT_THROW(GgufWriter(1), Error);
    EXPECT_THROW(GgufWriter(4), Error);
}

std::vector<float> iota_floats(size_t n) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * 0.5f - 3.0f;
    return v;
}

TEST(GgufRoundTrip, TensorsKeepShapeTypeAndBytes) {
    GgufWriter w;
    const std::vector<float> a = iota_floats(6 * 4);
    w.add_tensor_f32("a", {6, 4}, a);
    std::vector<std::byte> q(2 * 18);  // two Q4_0 blocks: one row of 64
    for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<std::byte>(i * 7);
    w.add_tensor("q", GgmlType::Q4_0, {64}, q);
    const std::vector<float> c = iota_floats(2 * 3 * 2 * 5);
    w.add_tensor_f32("c4d", {2, 3, 2, 5}, c);
    const GgufFile f = round_trip(w);
    ASSERT_EQ(f.tensors().size(), 3u);
    EXPECT_EQ(f.data_offset() % 32, 0u);
    const TensorInfo* ta = f.find_tensor("a");
    ASSERT_NE(ta, nullptr);
    EXPECT_EQ(ta->n_dims, 2u);
    EXPECT_EQ(ta->ne, (std::array<uint64_t, 4>{6, 4, 1, 1}));
    EXPECT_EQ(ta->type, GgmlType::F32);
    EXPECT_EQ(ta->n_elements, 24u);
    EXPECT_EQ(ta->n_rows(), 4u);
    EXPECT_EQ(ta->n_bytes, 96u);
    const auto da = f.tensor_data(*ta);
    ASSERT_EQ(da.size(), 96u);
    EXPECT_EQ(std::memcmp(da.data(), a.data(), 96), 0);
    const TensorInfo* tq = f.find_tensor("q");
    ASSERT_NE(tq, nullptr);
    EXPECT_EQ(tq->type, GgmlType::Q4_0);
    EXPECT_EQ(tq->n_bytes, 36u);
    EXPECT_EQ(tq->offset % 32, 0u);
    EXPECT_EQ(std::memcmp(f.tensor_data(*tq).data(), q.data(), q.size()), 0);
    const TensorInfo* tc = f.find_tensor("c4d");
    ASSERT_NE(tc, nullptr);
    EXPECT_EQ(tc->n_dims, 4u);
    EXPECT_EQ(tc->n_rows(), 30u);
    EXPECT_EQ(std::memcmp(f.tensor_data(*tc).data(), c.data(), c.size() * 4), 0);
    EXPECT_EQ(f.find_tensor("nope"), nullptr);
}

TEST(GgufRoundTrip, CustomAlignment) {
    for (const uint64_t alignment : {1ull, 8ull, 64ull, 4096ull}) {
        GgufWriter w;
        w.set_alignment(alignment);
        EXPECT_EQ(w.alignment(), alignment);
        w.add_tensor_f32("x", {3}, iota_floats(3));
        w.add_tensor_f32("y", {5}, iota_floats(5));
        const GgufFile f = round_trip(w);
        EXPECT_EQ(f.alignment(), alignment);
        EXPECT_EQ(f.data_offset() % alignment, 0u);
        EXPECT_EQ(f.find_tensor("y")->offset % alignment, 0u);
        EXPECT_EQ(f.get_uint("general.alignment"), alignment);
    }
    GgufWriter w;
    EXPECT_THROW(w.set_alignment(0), Error);
    EXPECT_THROW(w.set_alignment(48), Error);
}

TEST(GgufRoundTrip, AlignmentOfAnyIntegerType) {
    GgufWriter w;
    w.add_i16("general.alignment", 16);
    w.add_tensor_f32("x", {3}, iota_floats(3));
    w.add_tensor_f32("y", {3}, iota_floats(3));
    EXPECT_EQ(w.alignment(), 16u);
    const GgufFile f = round_trip(w);
    EXPECT_EQ(f.alignment(), 16u);
    EXPECT_EQ(f.find_tensor("y")->offset, 16u);
}

TEST(GgufRoundTrip, FileWithoutTensorsOrMetadata) {
    const GgufFile empty = round_trip(GgufWriter());
    EXPECT_TRUE(empty.metadata().empty());
    EXPECT_TRUE(empty.tensors().empty());
    EXPECT_EQ(empty.alignment(), kDefaultAlignment);
    EXPECT_LE(empty.data_offset(), empty.file_size());
    // A file without tensors may end right after its header, without padding.
    GgufWriter w;
    w.add_u8("k", 1);
    std::vector<std::byte> image = w.to_bytes();
    ASSERT_EQ(image.size(), 64u);
    image.resize(24 + 8 + 1 + 4 + 1);  // header, key "k", type, value
    const GgufFile f = GgufFile::parse(image, "short.gguf");
    EXPECT_EQ(f.get_uint("k"), 1u);
    EXPECT_EQ(f.data_offset(), f.file_size());
}

TEST(GgufRoundTrip, ParseCopiesTheImage) {
    GgufWriter w;
    w.add_tensor_f32("x", {4}, iota_floats(4));
    std::vector<std::byte> image = w.to_bytes();
    const GgufFile f = GgufFile::parse(image, "copy.gguf");
    std::fill(image.begin(), image.end(), std::byte{0xFF});
    image.clear();
    image.shrink_to_fit();
    const auto d = f.tensor_data(*f.find_tensor("x"));
    float x0 = 0;
    std::memcpy(&x0, d.data(), 4);
    EXPECT_EQ(x0, -3.0f);
    EXPECT_EQ(f.name(), "copy.gguf");
}

TEST(GgufRoundTrip, MovedFileKeepsItsData) {
    GgufWriter w;
    w.add_string("s", "v");
    w.add_tensor_f32("x", {4}, iota_floats(4));
    GgufFile a = round_trip(w);
    GgufFile b = std::move(a);
    EXPECT_EQ(b.get_string("s"), "v");
    EXPECT_EQ(b.tensor_data(*b.find_tensor("x")).size(), 16u);
}

TEST(GgufWriterChecks, RejectsInconsistentInput) {
    GgufWriter w;
    w.add_u32("k", 1);
    EXPECT_THROW(w.add_u32("k", 2), Error);
    EXPECT_THROW(w.add_u32("", 2), Error);
    EXPECT_THROW(w.add("wide", Value(ValueType::U8, ValueType::U8, uint64_t{256})), Error);
    EXPECT_THROW(w.add("wide_i", Value(ValueType::I8, ValueType::I8, int64_t{-129})), Error);
    EXPECT_THROW(w.add("mismatch", Value(ValueType::U32, ValueType::U32, std::string("x"))), Error);
    EXPECT_THROW(
        w.add("nested", Value(ValueType::Array, ValueType::Array, std::vector<uint64_t>{})), Error);
    EXPECT_THROW(w.add("scalar_as_array", Value(ValueType::Array, ValueType::U8, uint64_t{1})),
                 Error);
    const std::vector<float> three(3);
    EXPECT_THROW(w.add_tensor_f32("", {3}, three), Error);
    EXPECT_THROW(w.add_tensor_f32("t", {4}, three), Error);     // size mismatch
    EXPECT_THROW(w.add_tensor_f32("t", {3, 0}, three), Error);  // zero dim
    EXPECT_THROW(w.add_tensor_f32("t", {}, three), Error);
    EXPECT_THROW(w.add_tensor("t", GgmlType::Q4_0, {16}, std::vector<std::byte>(9)), Error);
    w.add_tensor_f32("t", {3}, three);
    EXPECT_THROW(w.add_tensor_f32("t", {3}, three), Error);  // duplicate
    EXPECT_EQ(w.tensor_count(), 1u);
    EXPECT_EQ(w.metadata_count(), 1u);
}

}  // namespace
}  // namespace fluoro::gguf
