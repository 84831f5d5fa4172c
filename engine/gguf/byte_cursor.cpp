#include "gguf/byte_cursor.h"

#include "core/error.h"

namespace fluoro::gguf {

void throw_format_error(std::string_view file, uint64_t offset, std::string_view problem,
                        std::string_view expected) {
    std::string msg;
    msg.reserve(file.size() + problem.size() + expected.size() + 40);
    msg.append(file).append(": byte ").append(std::to_string(offset)).append(": ");
    msg.append(problem).append("; expected ").append(expected);
    throw FormatError(msg);
}

const std::byte* ByteCursor::take(uint64_t n, std::string_view what) {
    if (n > remaining()) {
        fail(pos_,
             "file ends inside " + std::string(what) + " (" + std::to_string(n) +
                 " bytes needed, " + std::to_string(remaining()) + " left)",
             "a complete file");
    }
    const std::byte* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
}

uint64_t ByteCursor::read_le(unsigned n_bytes, std::string_view what) {
    const std::byte* p = take(n_bytes, what);
    uint64_t v = 0;
    for (unsigned i = 0; i < n_bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return v;
}

uint8_t ByteCursor::u8(std::string_view what) {
    return static_cast<uint8_t>(read_le(1, what));
}
uint16_t ByteCursor::u16(std::string_view what) {
    return static_cast<uint16_t>(read_le(2, what));
}
uint32_t ByteCursor::u32(std::string_view what) {
    return static_cast<uint32_t>(read_le(4, what));
}
uint64_t ByteCursor::u64(std::string_view what) {
    return read_le(8, what);
}

std::string_view ByteCursor::string(std::string_view what) {
    const uint64_t at = pos_;
    const uint64_t len = u64(what);
    if (len > remaining()) {
        fail(at,
             std::string(what) + " claims " + std::to_string(len) + " bytes but only " +
                 std::to_string(remaining()) + " follow",
             "a length of at most " + std::to_string(remaining()));
    }
    const std::byte* p = take(len, what);
    return {reinterpret_cast<const char*>(p), static_cast<size_t>(len)};
}

bool ByteCursor::string_fits() const {
    if (remaining() < 8) return false;
    uint64_t len = 0;
    for (unsigned i = 0; i < 8; ++i) len |= static_cast<uint64_t>(bytes_[pos_ + i]) << (8 * i);
    return len <= remaining() - 8;
}

void ByteCursor::check_count(uint64_t at, uint64_t count, uint64_t min_bytes,
                             std::string_view what) const {
    const uint64_t max_count = remaining() / min_bytes;
    if (count > max_count) {
        fail(at,
             std::string(what) + " " + std::to_string(count) + " cannot fit in the " +
                 std::to_string(remaining()) + " bytes that follow (each takes at least " +
                 std::to_string(min_bytes) + ")",
             "at most " + std::to_string(max_count));
    }
}

}  // namespace fluoro::gguf
