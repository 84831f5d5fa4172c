// Hostile metadata: absurd lengths and counts, unknown or nested types, duplicate and empty
// keys, bad UTF-8, bad alignment. Each must be a FormatError naming the offset or the key.
#include <gtest/gtest.h>

#include "raw_gguf.h"

namespace fluoro::gguf {
namespace {

using test::parse_error;
using test::RawGguf;

// Offsets in a file with one pair whose key is "k": key at 24, type at 33, value at 37.
constexpr uint64_t kTypeAt = 24 + 8 + 1;
constexpr uint64_t kValueAt = kTypeAt + 4;

void expect_error(const RawGguf& raw, std::initializer_list<std::string_view> needles) {
    const std::string e = parse_error(raw);
    for (const auto n : needles)
        EXPECT_NE(e.find(n), std::string::npos) << "missing '" << n << "' in: " << e;
}

std::string at(uint64_t offset) {
    return "byte " + std::to_string(offset) + ": ";
}

TEST(GgufHostileMetadata, HugeKeyLength) {
    RawGguf raw;
    raw.header(0, 1).u64(uint64_t{1} << 63).zeros(16);
    expect_error(raw, {at(24), "the key of metadata pair 0 claims 9223372036854775808 bytes"});
}

TEST(GgufHostileMetadata, HugeStringValueLength) {
    RawGguf raw;
    raw.header(0, 1).str("k").u32(8).u64(uint64_t{1} << 63).zeros(16);
    expect_error(raw, {at(kValueAt), "the value of key 'k' claims"});
}

TEST(GgufHostileMetadata, HugeArrayCounts) {
    for (const uint32_t elem : {0u, 7u, 8u, 12u}) {  // u8, bool, string, f64
        RawGguf raw;
        raw.header(0, 1).str("k").u32(9).u32(elem).u64(uint64_t{1} << 62).zeros(64);
        expect_error(raw, {at(kValueAt + 4), "array length of key 'k' 4611686018427387904"});
    }
    RawGguf raw;  // 9 strings need at least 72 bytes; only 64 follow
    raw.header(0, 1).str("k").u32(9).u32(8).u64(9).zeros(64);
    expect_error(raw, {"array length of key 'k' 9 cannot fit in the 64 bytes", "at most 8"});
}

TEST(GgufHostileMetadata, UnknownValueTypes) {
    RawGguf raw;
    raw.header(0, 1).str("k").u32(13).u64(0);
    expect_error(raw, {at(kTypeAt), "key 'k' has unknown value type 13"});
    RawGguf arr;
    arr.header(0, 1).str("k").u32(9).u32(0xFFFFFFFF).u64(0);
    expect_error(arr, {at(kValueAt), "key 'k' has unknown array element type 4294967295"});
}

TEST(GgufHostileMetadata, NestedArraysAreRejected) {
    RawGguf raw;
    raw.header(0, 1).str("k").u32(9).u32(9).u64(1).u32(0).u64(0);
    expect_error(raw, {at(kValueAt), "key 'k' is an array of arrays", "nested arrays"});
}

TEST(GgufHostileMetadata, DuplicateKey) {
    RawGguf raw;
    raw.header(0, 2).kv_u32("k", 1).kv_u32("k", 2);
    expect_error(raw, {at(24 + 17), "duplicate key 'k' (first defined at byte 24)"});
}

TEST(GgufHostileMetadata, EmptyKey) {
    RawGguf raw;
    raw.header(0, 1).kv_u32("", 1);
    expect_error(raw, {at(24), "metadata pair 0 has an empty key"});
}

TEST(GgufHostileMetadata, NonUtf8Key) {
    RawGguf raw;
    raw.header(0, 2).kv_u32("ok", 1).kv_u32("a\xFF", 1);
    // second pair at 24 + 8+2 + 4+4 = 42; bad byte at index 1 of its text
    expect_error(raw, {at(42 + 8 + 1), "the key of metadata pair 1 is not valid UTF-8"});
}

TEST(GgufHostileMetadata, NonUtf8StringValue) {
    RawGguf raw;
    raw.header(0, 1).kv_string("k", "\xC0\xAF");
    expect_error(raw, {at(kValueAt + 8), "the value of key 'k' is not valid UTF-8", "UTF-8 text"});
}

TEST(GgufHostileMetadata, NonUtf8ArrayElement) {
    RawGguf raw;
    raw.header(0, 1)
        .str("tokenizer.ggml.tokens")
        .u32(9)
        .u32(8)
        .u64(2)
        .str("fine")
        .str("\xED\xA0\x80");
    expect_error(raw, {"element 1 of key 'tokenizer.ggml.tokens' is not valid UTF-8"});
}

TEST(GgufHostileMetadata, TruncatedArrayElementIsNamed) {
    RawGguf raw;
    raw.header(0, 1).str("k").u32(9).u32(8).u64(2).str("fine").u64(100).zeros(10);
    expect_error(raw, {"element 1 of key 'k' claims 100 bytes"});
}

TEST(GgufHostileMetadata, AlignmentMustBeAPowerOfTwo) {
    for (const uint32_t a : {0u, 3u, 48u}) {
        RawGguf raw;
        raw.header(0, 1).kv_u32("general.alignment", a);
        expect_error(raw, {at(24), "key 'general.alignment' is " + std::to_string(a),
                           "expected a non-zero power of two"});
    }
    RawGguf str;
    str.header(0, 1).kv_string("general.alignment", "32");
    expect_error(str, {"'general.alignment' has type string"});
    RawGguf neg;
    neg.header(0, 1).str("general.alignment").u32(5).u32(0xFFFFFFE0);  // i32 -32
    expect_error(neg, {"'general.alignment' is negative"});
}

TEST(GgufHostileMetadata, AnyIntegerTypeIsAcceptedForAlignment) {
    RawGguf raw;
    raw.header(0, 1).str("general.alignment").u32(0).u8(64);  // u8 64
    EXPECT_EQ(GgufFile::parse(raw.bytes(), "t.gguf").alignment(), 64u);
}

}  // namespace
}  // namespace fluoro::gguf
