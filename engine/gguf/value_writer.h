// Serializing GGUF metadata values: a little-endian byte sink, and the checks that a Value's
// storage matches its declared type and width before it is written. Part of GgufWriter; not a
// public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "gguf/gguf_value.h"

namespace fluoro::gguf {

// Little-endian serialization into a growing buffer.
class ByteSink {
  public:
    explicit ByteSink(std::vector<std::byte>& out) : out_(out) {}
    void le(uint64_t v, unsigned n_bytes) {
        for (unsigned i = 0; i < n_bytes; ++i) out_.push_back(static_cast<std::byte>(v >> (8 * i)));
    }
    void u32(uint32_t v) { le(v, 4); }
    void u64(uint64_t v) { le(v, 8); }
    void string(std::string_view s) {
        u64(s.size());
        const auto* p = reinterpret_cast<const std::byte*>(s.data());
        out_.insert(out_.end(), p, p + s.size());
    }
    void bytes(std::span<const std::byte> b) { out_.insert(out_.end(), b.begin(), b.end()); }
    void pad_to(uint64_t alignment) {
        while (out_.size() % alignment != 0) out_.push_back(std::byte{0});
    }

  private:
    std::vector<std::byte>& out_;
};

// Error (naming the key) unless v's storage matches its type: the right variant alternative,
// numbers that fit the declared width, arrays of scalars or strings only.
void check_value(std::string_view key, const Value& v);
// Writes the type code(s) and the value (a checked Value).
void write_value(ByteSink& out, const Value& v);

}  // namespace fluoro::gguf
