// GGUF model files: a memory-mapped, fully validated reader. Opening a file checks every count,
// length and offset against the file size (overflow-safe), so everything reachable through a
// GgufFile is in bounds; a truncated, corrupt or hostile file fails with a FormatError naming the
// file, the byte offset and what was expected. Versions 2 and 3 (little-endian) are read.
//
// Where this reader is stricter or looser than ggml's gguf.cpp (on purpose):
// - every dimension must be >= 1 (ggml allows 0): an empty tensor is never a usable weight, and
//   consumers may divide by ne[0];
// - tensor names may be up to 256 bytes (ggml: 63) but not empty; keys may not be empty;
// - keys, tensor names and string values must be valid UTF-8;
// - tensor data ranges must not overlap, but need not be packed in directory order;
// - a file without tensors may end before the padding that would start its data section.
// Counts and lengths are checked against the bytes left before anything is allocated, so memory
// use is bounded by a small multiple of the file size.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_value.h"
#include "tensor/ggml_type.h"

namespace fluoro::gguf {

constexpr uint64_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;

struct TensorInfo {
    std::string name;
    uint32_t n_dims = 0;
    std::array<uint64_t, kMaxDims> ne{1, 1, 1, 1};  // ne[0] innermost (row length); unused dims = 1
    GgmlType type = GgmlType::F32;                  // validated: a type ggml defines
    uint64_t offset = 0;                            // relative to the data section
    uint64_t n_elements = 0;
    uint64_t n_bytes = 0;
    uint64_t n_rows() const { return n_elements / ne[0]; }
};

struct KeyValue {
    std::string key;
    Value value;
};

class MappedFile;
class ByteCursor;

class GgufFile {
  public:
    // Maps and validates the file; throws FormatError (bad content) or Error (I/O).
    static GgufFile open(const std::filesystem::path& path);
    // Parses an in-memory image (used by the fuzzer and tests); `name` appears in errors. The
    // bytes are copied, so the caller's buffer need not outlive the GgufFile.
    static GgufFile parse(std::span<const std::byte> bytes, std::string name);

    GgufFile(GgufFile&&) noexcept;
    GgufFile& operator=(GgufFile&&) noexcept;
    ~GgufFile();

    const std::string& name() const { return name_; }  // path or given name, for messages
    uint32_t version() const { return version_; }
    uint64_t file_size() const { return bytes_.size(); }
    uint64_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }

    // --- metadata, in file order ---
    const std::vector<KeyValue>& metadata() const { return kv_; }
    const Value* find(std::string_view key) const;
    // Typed getters: nullopt when the key is absent; FormatError naming the key when present
    // with a type that cannot be converted (integers of any width convert to each other when
    // the value fits; floats accept any numeric type).
    std::optional<uint64_t> get_uint(std::string_view key) const;
    std::optional<int64_t> get_int(std::string_view key) const;
    std::optional<double> get_float(std::string_view key) const;
    std::optional<bool> get_bool(std::string_view key) const;
    std::optional<std::string> get_string(std::string_view key) const;
    // Required variants: FormatError naming the key when absent.
    uint64_t require_uint(std::string_view key) const;
    double require_float(std::string_view key) const;
    std::string require_string(std::string_view key) const;
    // A scalar-or-per-layer value (e.g. head_count): a scalar is repeated n_layers times; an
    // array must have exactly n_layers entries. nullopt when absent.
    std::optional<std::vector<uint64_t>> get_uint_per_layer(std::string_view key,
                                                            size_t n_layers) const;

    // --- tensors, in directory order ---
    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    const TensorInfo* find_tensor(std::string_view name) const;
    // Throws Error naming the file when it was modified or truncated in place since it was
    // opened (its mapping is no longer trustworthy: reload the model). A file replaced under the
    // same name (rename) is fine: the mapping keeps the old one; that returns true.
    bool check_unchanged_on_disk() const;

    // The tensor's bytes inside the mapping (valid while this GgufFile lives).
    std::span<const std::byte> tensor_data(const TensorInfo& t) const;
    // For a backend that copied a tensor's bytes: drops their whole pages from resident memory
    // when the file is mapped (MappedFile::drop_pages; they stay readable). A no-op for a file
    // parsed from memory.
    void drop_pages(std::span<const std::byte> bytes) const noexcept;

  private:
    using Index = std::map<std::string, size_t, std::less<>>;

    GgufFile() = default;
    void parse_all();
    void read_metadata(ByteCursor& c, uint64_t n_kv);
    uint64_t read_alignment() const;
    [[noreturn]] void key_error(std::string_view key, std::string_view problem,
                                std::string_view expected) const;

    std::string name_;
    std::unique_ptr<MappedFile> map_;   // owns the mapping when opened from a path
    std::vector<std::byte> owned_;      // owns the image when parsed from memory
    std::span<const std::byte> bytes_;  // the whole file image
    uint32_t version_ = 0;
    uint64_t alignment_ = kDefaultAlignment;
    uint64_t data_offset_ = 0;
    std::vector<KeyValue> kv_;
    std::vector<uint64_t> kv_at_;  // byte offset of each key, for getter errors
    Index kv_index_;
    std::vector<TensorInfo> tensors_;
    Index tensor_index_;
};

}  // namespace fluoro::gguf
