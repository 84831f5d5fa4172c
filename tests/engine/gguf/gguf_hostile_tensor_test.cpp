// Hostile tensor directories: bad shapes, types, names and offsets, and data outside the file
// or overlapping. Each must be a FormatError naming the tensor and the offset.
#include <gtest/gtest.h>

#include "raw_gguf.h"

namespace fluoro::gguf {
namespace {

using test::parse_error;
using test::RawGguf;

constexpr uint32_t kF32 = 0, kQ4_0 = 2;

struct Entry {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type = kF32;
    uint64_t offset = 0;
};

// A file with the given tensor entries, padded to 32, then `data_bytes` zero bytes.
RawGguf file_with(const std::vector<Entry>& entries, size_t data_bytes) {
    RawGguf raw;
    raw.header(entries.size(), 0);
    for (const Entry& e : entries) raw.tensor(e.name, e.ne, e.type, e.offset);
    return std::move(raw.pad_to(32).zeros(data_bytes));
}

void expect_error(const RawGguf& raw, std::initializer_list<std::string_view> needles) {
    const std::string e = parse_error(raw);
    for (const auto n : needles)
        EXPECT_NE(e.find(n), std::string::npos) << "missing '" << n << "' in: " << e;
}

// Offsets inside the first entry of a file whose first tensor is named "t" with n dims.
constexpr uint64_t kNameAt = 24;
constexpr uint64_t kDimsAt = kNameAt + 8 + 1;
constexpr uint64_t type_at(uint64_t n_dims) {
    return kDimsAt + 4 + 8 * n_dims;
}
constexpr uint64_t offset_at(uint64_t n_dims) {
    return type_at(n_dims) + 4;
}
std::string at(uint64_t offset) {
    return "byte " + std::to_string(offset) + ": ";
}

TEST(GgufHostileTensor, ValidBaseline) {
    const RawGguf raw = file_with({{"t", {4, 2}, kF32, 0}, {"u", {8}, kF32, 32}}, 64);
    const GgufFile f = GgufFile::parse(raw.bytes(), "t.gguf");
    ASSERT_EQ(f.tensors().size(), 2u);
    EXPECT_EQ(f.data_offset(), 128u);  // directory ends at 24 + 41 + 33 = 98, padded to 32
}

TEST(GgufHostileTensor, DataPastTheEnd) {
    expect_error(
        file_with({{"t", {8}, kF32, 0}}, 31),
        {at(offset_at(1)), "tensor 't' data (32 bytes at data offset 0) extends past the end"});
    expect_error(file_with({{"t", {8}, kF32, 64}}, 64), {"extends past the end"});
    // Offsets and sizes near 2^64 must not wrap around.
    expect_error(file_with({{"t", {8}, kF32, ~uint64_t{31}}}, 64), {"extends past the end"});
    expect_error(file_with({{"t", {uint64_t{1} << 60}, kF32, 0}}, 64), {"extends past the end"});
}

TEST(GgufHostileTensor, DataSectionPastTheEnd) {
    RawGguf raw;
    raw.header(1, 0).tensor("t", {1}, kF32, 0);  // 24 + 33 = 57 bytes; no padding, no data
    expect_error(raw, {at(57), "the tensor data section would start at byte 57"});
}

TEST(GgufHostileTensor, OverlappingData) {
    expect_error(file_with({{"a", {8}, kF32, 0}, {"b", {8}, kF32, 0}}, 64),
                 {"tensor 'b' data [0, 32) overlaps tensor 'a' data [0, 32)", "disjoint"});
    expect_error(file_with({{"a", {16}, kF32, 0}, {"b", {8}, kF32, 32}}, 96),
                 {"tensor 'b' data [32, 64) overlaps tensor 'a' data [0, 64)"});
    // Order in the directory does not matter.
    expect_error(file_with({{"b", {8}, kF32, 32}, {"a", {16}, kF32, 0}}, 96), {"overlaps"});
}

TEST(GgufHostileTensor, MisalignedOffset) {
    expect_error(
        file_with({{"t", {4}, kF32, 16}}, 64),
        {at(offset_at(1)), "tensor 't' data offset 16 is not a multiple of the alignment 32"});
    RawGguf raw;  // alignment 64 from metadata
    raw.header(1, 1)
        .kv_u32("general.alignment", 64)
        .tensor("t", {4}, kF32, 32)
        .pad_to(64)
        .zeros(128);
    expect_error(raw, {"not a multiple of the alignment 64"});
}

TEST(GgufHostileTensor, UnknownTypes) {
    for (const uint32_t type : {4u, 5u, 31u, 77u, 0xFFFFFFFFu}) {
        expect_error(
            file_with({{"t", {32}, type, 0}}, 256),
            {at(type_at(1)), "tensor 't' has type " + std::to_string(type) + " (unknown to ggml)",
             "expected a ggml type id"});
    }
}

TEST(GgufHostileTensor, DimensionCount) {
    for (const uint32_t n_dims : {0u, 5u, 1000u}) {
        RawGguf raw;
        raw.header(1, 0).str("t").u32(n_dims).zeros(200);
        expect_error(raw, {at(kDimsAt), "tensor 't' has " + std::to_string(n_dims) + " dimensions",
                           "expected 1 to 4"});
    }
}

TEST(GgufHostileTensor, ZeroAndHugeDimensions) {
    expect_error(file_with({{"t", {4, 0}, kF32, 0}}, 64),
                 {at(kDimsAt + 4 + 8), "dimension 1 of tensor 't' is 0", "empty tensors"});
    expect_error(file_with({{"t", {uint64_t{1} << 63}, kF32, 0}}, 64),
                 {"dimension 0 of tensor 't' is 9223372036854775808"});
}

TEST(GgufHostileTensor, ElementCountOverflow) {
    expect_error(file_with({{"t", {uint64_t{1} << 32, uint64_t{1} << 32}, kF32, 0}}, 64),
                 {at(kDimsAt + 4 + 8), "tensor 't' has more than 2^63-1 elements"});
    expect_error(file_with({{"t", {3, 5, 7, uint64_t{1} << 62}}}, 64), {"more than 2^63-1"});
}

TEST(GgufHostileTensor, ByteSizeOverflow) {
    expect_error(file_with({{"t", {uint64_t{1} << 61, 3}, kF32, 0}}, 64),
                 {at(type_at(2)), "tensor 't' is too large"});
}

TEST(GgufHostileTensor, RowLengthNotAWholeNumberOfBlocks) {
    expect_error(file_with({{"t", {33, 2}, kQ4_0, 0}}, 256),
                 {at(type_at(2)),
                  "tensor 't' has rows of 33 elements, not a multiple of the q4_0 block size 32"});
}

TEST(GgufHostileTensor, Names) {
    expect_error(file_with({{"", {4}, kF32, 0}}, 64), {at(24), "tensor 0 has an empty name"});
    expect_error(file_with({{"a\xFF", {4}, kF32, 0}}, 64),
                 {at(24 + 8 + 1), "tensor name is not valid UTF-8"});
    expect_error(file_with({{"dup", {4}, kF32, 0}, {"dup", {4}, kF32, 32}}, 64),
                 {at(24 + 35), "duplicate tensor name 'dup' (first defined at byte 24)"});
    expect_error(file_with({{std::string(257, 'n'), {4}, kF32, 0}}, 64),
                 {"is 257 bytes long", "at most 256 bytes"});
    const RawGguf ok = file_with({{std::string(256, 'n'), {4}, kF32, 0}}, 64);
    EXPECT_NO_THROW(GgufFile::parse(ok.bytes(), "t.gguf"));
}

}  // namespace
}  // namespace fluoro::gguf
