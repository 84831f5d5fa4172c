// Hostile headers: bad magic, unsupported versions, absurd counts, and truncation at every byte.
#include <gtest/gtest.h>

#include <algorithm>

#include "gguf/gguf_writer.h"
#include "raw_gguf.h"

namespace fluoro::gguf {
namespace {

using test::parse_error;
using test::RawGguf;

bool contains(const std::string& s, std::string_view needle) {
    return s.find(needle) != std::string::npos;
}

TEST(GgufHostileHeader, EmptyAndTinyFiles) {
    const std::string empty = parse_error(std::span<const std::byte>{});
    EXPECT_TRUE(contains(empty, "t.gguf: byte 0: the file is empty")) << empty;
    const std::vector<std::byte> three(3, std::byte{'G'});
    EXPECT_TRUE(contains(parse_error(three), "only 3 bytes")) << parse_error(three);
}

TEST(GgufHostileHeader, BadMagic) {
    RawGguf raw;
    raw.u32(0x4C4D4747).u32(3).u64(0).u64(0);  // "GGML"
    const std::string e = parse_error(raw);
    EXPECT_TRUE(contains(e, "byte 0: bad magic \"GGML\"; expected \"GGUF\"")) << e;
}

TEST(GgufHostileHeader, Version1IsRejected) {
    const std::string e = parse_error(RawGguf().header(0, 0, 1));
    EXPECT_TRUE(contains(e, "byte 4: GGUF version 1 is no longer supported")) << e;
}

TEST(GgufHostileHeader, BigEndianIsNamed) {
    for (const uint32_t v : {3u << 24, 2u << 24}) {
        const std::string e = parse_error(RawGguf().header(0, 0, v));
        EXPECT_TRUE(contains(e, "byte 4: big-endian GGUF is not supported")) << e;
    }
}

TEST(GgufHostileHeader, FutureAndZeroVersions) {
    EXPECT_TRUE(contains(parse_error(RawGguf().header(0, 0, 4)), "unsupported GGUF version 4"));
    EXPECT_TRUE(contains(parse_error(RawGguf().header(0, 0, 0)), "unsupported GGUF version 0"));
    EXPECT_TRUE(contains(parse_error(RawGguf().header(0, 0, 0xFFFFFFFF)), "newer than this"));
}

TEST(GgufHostileHeader, AbsurdMetadataCount) {
    RawGguf raw;
    raw.header(0, uint64_t{1} << 62).kv_u32("a", 1);
    const std::string e = parse_error(raw);
    EXPECT_TRUE(contains(e, "byte 16: metadata count 4611686018427387904 cannot fit")) << e;
}

TEST(GgufHostileHeader, AbsurdTensorCount) {
    for (const uint64_t n : {uint64_t{1} << 62, ~uint64_t{0}, uint64_t{2}}) {
        RawGguf raw;
        raw.header(n, 0).zeros(40);
        const std::string e = parse_error(raw);
        EXPECT_TRUE(contains(e, "byte 8: tensor count " + std::to_string(n))) << e;
    }
}

TEST(GgufHostileHeader, TensorCountCheckedAgainstBytesLeftAfterMetadata) {
    RawGguf raw;
    raw.header(2, 1).kv_string("k", std::string(100, 'x')).zeros(40);
    const std::string e = parse_error(raw);
    EXPECT_TRUE(contains(e, "byte 8: tensor count 2 cannot fit in the 40 bytes")) << e;
}

// A small but complete file: several value types, an array of strings, two tensor types.
std::vector<std::byte> small_file() {
    GgufWriter w;
    w.add_string("general.architecture", "llama");
    w.add_u32("llama.block_count", 2);
    w.add_bool("flag", true);
    w.add_string_array("tokenizer.ggml.tokens", {"a", "bc", ""});
    const std::vector<float> scores = {0.5f, -1.0f};
    w.add_f32_array("tokenizer.ggml.scores", scores);
    const std::vector<float> x(8, 1.0f);
    w.add_tensor_f32("x", {4, 2}, x);
    w.add_tensor("q", GgmlType::Q8_0, {32}, std::vector<std::byte>(34));
    return w.to_bytes();
}

// Where the last tensor's bytes end (the writer pads after it; cutting padding is harmless).
size_t data_end(const std::vector<std::byte>& image) {
    const GgufFile f = GgufFile::parse(image, "t.gguf");
    uint64_t end = 0;
    for (const TensorInfo& t : f.tensors())
        end = std::max(end, f.data_offset() + t.offset + t.n_bytes);
    return static_cast<size_t>(end);
}

TEST(GgufHostileHeader, TruncationAtEveryByteIsAFormatError) {
    const std::vector<std::byte> full = small_file();
    const size_t end = data_end(full);
    ASSERT_GT(end, 300u);
    EXPECT_NO_THROW(GgufFile::parse(std::span(full).first(end), "t.gguf"));
    for (size_t n = 0; n < end; ++n) {
        const std::string e = parse_error(std::span(full).first(n));
        ASSERT_TRUE(contains(e, "t.gguf: byte ")) << "prefix " << n << ": " << e;
        ASSERT_TRUE(contains(e, "; expected ")) << "prefix " << n << ": " << e;
    }
}

TEST(GgufHostileHeader, TruncationMessagesSayWhatWasCut) {
    const std::vector<std::byte> full = small_file();
    EXPECT_TRUE(contains(parse_error(std::span(full).first(6)), "file ends inside the version"));
    EXPECT_TRUE(contains(parse_error(std::span(full).first(20)), "the metadata count"));
    EXPECT_TRUE(contains(parse_error(std::span(full).first(data_end(full) - 1)),
                         "extends past the end of the file"));
}

}  // namespace
}  // namespace fluoro::gguf
