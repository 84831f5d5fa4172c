// Writing GGUF files (versions 2 and 3, little-endian): metadata of every value type, arrays,
// and tensors given as raw bytes of any ggml type or as float32 data; offsets and padding are
// computed. Used by tests, the fuzzer's seed corpus and test_model. Everything is held in
// memory until written, so it is meant for small files.
//
// The writer checks what it needs to lay the file out (tensor shapes and sizes, unique names,
// values that fit their declared width) but deliberately not UTF-8, so tests can write hostile
// strings. A general.alignment that is not a non-zero power of two up to 1 MiB is written as
// given (for hostile-input tests) and the layout then uses the default alignment of 32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_value.h"
#include "tensor/ggml_type.h"

namespace fluoro::gguf {

class GgufWriter {
  public:
    // version must be 2 or 3 (same layout; only the header field differs); else Error.
    explicit GgufWriter(uint32_t version = 3);

    // Sets (or replaces) general.alignment as a u32; a power of two up to 1 MiB, else Error.
    void set_alignment(uint64_t alignment);
    // The alignment the layout will use.
    uint64_t alignment() const;

    // --- metadata, written in the order added. Error on an empty or duplicate key, on a
    // Value whose storage does not match its type, or on a number too wide for its type. ---
    void add(std::string key, Value value);
    // Drops a key added earlier (a test file without, say, a chat template); false when absent.
    bool erase(std::string_view key);
    void add_u8(std::string key, uint8_t v);
    void add_i8(std::string key, int8_t v);
    void add_u16(std::string key, uint16_t v);
    void add_i16(std::string key, int16_t v);
    void add_u32(std::string key, uint32_t v);
    void add_i32(std::string key, int32_t v);
    void add_u64(std::string key, uint64_t v);
    void add_i64(std::string key, int64_t v);
    void add_f32(std::string key, float v);
    void add_f64(std::string key, double v);
    void add_bool(std::string key, bool v);
    void add_string(std::string key, std::string v);
    void add_string_array(std::string key, std::vector<std::string> v);
    void add_f32_array(std::string key, std::span<const float> v);
    void add_i32_array(std::string key, std::span<const int32_t> v);
    void add_u32_array(std::string key, std::span<const uint32_t> v);

    // --- tensors, in the order added; ne[0] is the row length (1 to 4 dims, each >= 1). ---
    // `data` must hold exactly the tensor's bytes (row_bytes(type, ne[0]) * rows); it is copied.
    void add_tensor(std::string name, GgmlType type, const std::vector<uint64_t>& ne,
                    std::span<const std::byte> data);
    // Stores float32 data as an F32 tensor.
    void add_tensor_f32(std::string name, const std::vector<uint64_t>& ne,
                        std::span<const float> data);

    size_t metadata_count() const { return kv_.size(); }
    size_t tensor_count() const { return tensors_.size(); }

    // The complete file image.
    std::vector<std::byte> to_bytes() const;
    // Writes the image to `path`; Error naming the path on failure.
    void write(const std::filesystem::path& path) const;

  private:
    struct Tensor {
        std::string name;
        GgmlType type;
        std::vector<uint64_t> ne;
        std::vector<std::byte> data;
    };
    struct Entry {
        std::string key;
        Value value;
    };

    uint32_t version_;
    std::vector<Entry> kv_;
    std::vector<Tensor> tensors_;
};

}  // namespace fluoro::gguf
