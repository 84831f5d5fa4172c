// Bounded little-endian reading of a GGUF image. Every read checks the bytes left first, and
// every failure is a FormatError of the form "<file>: byte <offset>: <problem>; expected <what>",
// so the parser above it never indexes past the end and never phrases its own messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace fluoro::gguf {

// Throws FormatError("<file>: byte <offset>: <problem>; expected <expected>").
[[noreturn]] void throw_format_error(std::string_view file, uint64_t offset,
                                     std::string_view problem, std::string_view expected);

class ByteCursor {
  public:
    ByteCursor(std::span<const std::byte> bytes, std::string_view file)
        : bytes_(bytes), file_(file) {}

    uint64_t pos() const { return pos_; }
    uint64_t size() const { return bytes_.size(); }
    uint64_t remaining() const { return bytes_.size() - pos_; }
    std::string_view file() const { return file_; }

    // `what` names the field in the truncation message ("the key length", ...).
    uint8_t u8(std::string_view what);
    uint16_t u16(std::string_view what);
    uint32_t u32(std::string_view what);
    uint64_t u64(std::string_view what);
    // A GGUF string: uint64 length, then that many bytes (checked against the bytes left
    // before anything is copied). The view points into the image.
    std::string_view string(std::string_view what);
    // True when a whole string (length field and bytes) fits in the bytes left; lets callers
    // build a descriptive name for the error message only when it will be used.
    bool string_fits() const;

    // Fails unless `count` items of at least `min_bytes` each fit in the bytes left; `at` is
    // where the count was read. Call before reserving or looping over a count from the file.
    void check_count(uint64_t at, uint64_t count, uint64_t min_bytes, std::string_view what) const;

    [[noreturn]] void fail(uint64_t at, std::string_view problem, std::string_view expected) const {
        throw_format_error(file_, at, problem, expected);
    }

  private:
    const std::byte* take(uint64_t n, std::string_view what);
    uint64_t read_le(unsigned n_bytes, std::string_view what);

    std::span<const std::byte> bytes_;
    std::string_view file_;
    uint64_t pos_ = 0;
};

}  // namespace fluoro::gguf
