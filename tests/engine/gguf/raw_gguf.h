// Hand-assembled GGUF bytes for hostile-input tests: every field is written explicitly, so a
// test can put any value (absurd counts, bad types, overlapping offsets) anywhere.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"

namespace fluoro::gguf::test {

class RawGguf {
  public:
    RawGguf& u8(uint8_t v) { return le(v, 1); }
    RawGguf& u32(uint32_t v) { return le(v, 4); }
    RawGguf& u64(uint64_t v) { return le(v, 8); }
    RawGguf& str(std::string_view s) {
        u64(s.size());
        for (const char c : s) bytes_.push_back(static_cast<std::byte>(c));
        return *this;
    }
    RawGguf& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
        bytes_.insert(bytes_.end(),
                      {std::byte{'G'}, std::byte{'G'}, std::byte{'U'}, std::byte{'F'}});
        return u32(version).u64(n_tensors).u64(n_kv);
    }
    RawGguf& kv_u32(std::string_view key, uint32_t v) { return str(key).u32(4).u32(v); }
    RawGguf& kv_string(std::string_view key, std::string_view v) { return str(key).u32(8).str(v); }
    // A tensor entry with n_dims = ne.size() (use tensor_dims for a lying n_dims).
    RawGguf& tensor(std::string_view name, std::vector<uint64_t> ne, uint32_t type,
                    uint64_t offset) {
        str(name).u32(static_cast<uint32_t>(ne.size()));
        for (const uint64_t n : ne) u64(n);
        return u32(type).u64(offset);
    }
    RawGguf& pad_to(uint64_t alignment) {
        while (bytes_.size() % alignment != 0) bytes_.push_back(std::byte{0});
        return *this;
    }
    RawGguf& zeros(size_t n) {
        bytes_.insert(bytes_.end(), n, std::byte{0});
        return *this;
    }
    uint64_t size() const { return bytes_.size(); }
    std::span<const std::byte> bytes() const { return bytes_; }

  private:
    RawGguf& le(uint64_t v, unsigned n) {
        for (unsigned i = 0; i < n; ++i) bytes_.push_back(static_cast<std::byte>(v >> (8 * i)));
        return *this;
    }
    std::vector<std::byte> bytes_;
};

// The FormatError message parsing `bytes` produces; fails the test when parsing succeeds or
// throws anything else.
inline std::string parse_error(std::span<const std::byte> bytes) {
    try {
        GgufFile::parse(bytes, "t.gguf");
    } catch (const FormatError& e) {
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "expected FormatError, got: " << e.what();
        return {};
    }
    ADD_FAILURE() << "expected FormatError, parse succeeded";
    return {};
}
inline std::string parse_error(const RawGguf& raw) {
    return parse_error(raw.bytes());
}

}  // namespace fluoro::gguf::test
