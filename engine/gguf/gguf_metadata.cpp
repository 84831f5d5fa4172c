// GgufFile: reading the metadata section and the general.alignment key.
#include <algorithm>

#include "gguf/byte_cursor.h"
#include "gguf/gguf_file.h"
#include "gguf/value_reader.h"

namespace fluoro::gguf {

void GgufFile::read_metadata(ByteCursor& c, uint64_t n_kv) {
    // n_kv was checked against the bytes left; reserve only a little so that a file full of
    // tiny pairs grows the vector in step with the bytes actually read.
    kv_.reserve(static_cast<size_t>(std::min<uint64_t>(n_kv, 4096)));
    for (uint64_t i = 0; i < n_kv; ++i) {
        const uint64_t at = c.pos();
        std::string key(read_utf8(c, "the key of metadata pair " + std::to_string(i)));
        if (key.empty())
            c.fail(at, "metadata pair " + std::to_string(i) + " has an empty key",
                   "a non-empty key");
        if (const auto it = kv_index_.find(key); it != kv_index_.end()) {
            c.fail(at,
                   "duplicate key '" + key + "' (first defined at byte " +
                       std::to_string(kv_at_[it->second]) + ")",
                   "unique keys");
        }
        const uint64_t type_at = c.pos();
        const uint32_t raw_type = c.u32("a value type");
        Value value = read_value(c, raw_type, type_at, key);
        kv_index_.emplace(key, kv_.size());
        kv_at_.push_back(at);
        kv_.push_back(KeyValue{std::move(key), std::move(value)});
    }
}

uint64_t GgufFile::read_alignment() const {
    const std::optional<uint64_t> a = get_uint("general.alignment");
    if (!a) return kDefaultAlignment;
    if (*a == 0 || (*a & (*a - 1)) != 0)
        key_error("general.alignment", "is " + std::to_string(*a), "a non-zero power of two");
    return *a;
}

}  // namespace fluoro::gguf
