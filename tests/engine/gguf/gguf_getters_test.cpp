// Typed getters: integer coercion across widths, float from any numeric, errors naming the key.
#include <gtest/gtest.h>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace fluoro::gguf {
namespace {

GgufFile sample() {
    GgufWriter w;
    w.add_u8("u8", 7);
    w.add_i16("i16_neg", -2);
    w.add_i32("i32_pos", 12);
    w.add_u64("u64_big", ~0ull);
    w.add_f32("f32", 0.25f);
    w.add_bool("flag", true);
    w.add_string("name", "llama");
    const std::vector<uint32_t> heads = {9, 9, 3};
    w.add_u32_array("heads", heads);
    const std::vector<int32_t> neg = {1, -1, 2};
    w.add_i32_array("neg_heads", neg);
    const std::vector<float> floats = {1, 2, 3};
    w.add_f32_array("float_heads", floats);
    return GgufFile::parse(w.to_bytes(), "getters.gguf");
}

// Runs f, expecting a FormatError whose message contains every needle.
template <typename F>
void expect_format_error(F f, std::initializer_list<std::string_view> needles) {
    try {
        f();
        ADD_FAILURE() << "no FormatError";
    } catch (const FormatError& e) {
        for (const auto n : needles)
            EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    }
}

TEST(GgufGetters, IntegersConvertAcrossWidths) {
    const GgufFile f = sample();
    EXPECT_EQ(f.get_uint("u8"), 7u);
    EXPECT_EQ(f.get_int("u8"), 7);
    EXPECT_EQ(f.get_uint("i32_pos"), 12u);
    EXPECT_EQ(f.get_int("i16_neg"), -2);
    EXPECT_EQ(f.get_uint("u64_big"), ~0ull);
    EXPECT_EQ(f.require_uint("u8"), 7u);
    EXPECT_FALSE(f.get_uint("absent").has_value());
    EXPECT_FALSE(f.get_int("absent").has_value());
}

TEST(GgufGetters, IntegerErrorsNameKeyAndOffset) {
    const GgufFile f = sample();
    expect_format_error([&] { (void)f.get_uint("i16_neg"); },
                        {"getters.gguf: byte ", "'i16_neg'", "negative", "expected an unsigned"});
    expect_format_error([&] { (void)f.get_int("u64_big"); }, {"'u64_big'", "int64"});
    expect_format_error([&] { (void)f.get_uint("f32"); }, {"'f32'", "has type f32"});
    expect_format_error([&] { (void)f.get_uint("name"); }, {"'name'", "has type string"});
    expect_format_error([&] { (void)f.get_uint("heads"); }, {"'heads'", "array of u32"});
    expect_format_error([&] { (void)f.get_uint("flag"); }, {"'flag'", "bool"});
}

TEST(GgufGetters, FloatsAcceptAnyNumber) {
    const GgufFile f = sample();
    EXPECT_EQ(f.get_float("f32"), 0.25);
    EXPECT_EQ(f.get_float("u8"), 7.0);
    EXPECT_EQ(f.get_float("i16_neg"), -2.0);
    EXPECT_EQ(f.require_float("i32_pos"), 12.0);
    EXPECT_FALSE(f.get_float("absent").has_value());
    expect_format_error([&] { (void)f.get_float("name"); }, {"'name'", "expected a number"});
    expect_format_error([&] { (void)f.get_float("flag"); }, {"'flag'"});
}

TEST(GgufGetters, BoolsAndStrings) {
    const GgufFile f = sample();
    EXPECT_EQ(f.get_bool("flag"), true);
    EXPECT_EQ(f.get_string("name"), "llama");
    EXPECT_EQ(f.require_string("name"), "llama");
    EXPECT_FALSE(f.get_bool("absent").has_value());
    EXPECT_FALSE(f.get_string("absent").has_value());
    expect_format_error([&] { (void)f.get_bool("u8"); }, {"'u8'", "expected a bool"});
    expect_format_error([&] { (void)f.get_string("u8"); }, {"'u8'", "expected a string"});
}

TEST(GgufGetters, RequiredKeysMustBePresent) {
    const GgufFile f = sample();
    expect_format_error([&] { (void)f.require_uint("llama.block_count"); },
                        {"getters.gguf", "'llama.block_count' is missing"});
    expect_format_error([&] { (void)f.require_float("x"); }, {"'x' is missing"});
    expect_format_error([&] { (void)f.require_string("general.architecture"); },
                        {"'general.architecture' is missing", "expected a string"});
}

TEST(GgufGetters, PerLayerScalarOrArray) {
    const GgufFile f = sample();
    EXPECT_EQ(f.get_uint_per_layer("u8", 3), (std::vector<uint64_t>{7, 7, 7}));
    EXPECT_EQ(f.get_uint_per_layer("heads", 3), (std::vector<uint64_t>{9, 9, 3}));
    EXPECT_FALSE(f.get_uint_per_layer("absent", 3).has_value());
    EXPECT_EQ(f.get_uint_per_layer("u8", 0), std::vector<uint64_t>{});
    expect_format_error([&] { (void)f.get_uint_per_layer("heads", 4); },
                        {"'heads'", "has 3 entries", "per layer (4)"});
    expect_format_error([&] { (void)f.get_uint_per_layer("neg_heads", 3); },
                        {"'neg_heads'", "entry 1 is negative"});
    expect_format_error([&] { (void)f.get_uint_per_layer("float_heads", 3); },
                        {"'float_heads'", "array of f32"});
    expect_format_error([&] { (void)f.get_uint_per_layer("i16_neg", 2); }, {"negative"});
    expect_format_error([&] { (void)f.get_uint_per_layer("name", 2); }, {"has type string"});
}

}  // namespace
}  // namespace fluoro::gguf
