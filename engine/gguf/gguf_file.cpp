#include "gguf/gguf_file.h"

#include <algorithm>

#include "core/error.h"
#include "gguf/byte_cursor.h"
#include "gguf/header_reader.h"
#include "gguf/mapped_file.h"
#include "gguf/tensor_reader.h"

namespace fluoro::gguf {
namespace {

// The data section starts at the first multiple of `alignment` after the directory. A file
// without tensors may end before that padding; its data section is then empty.
uint64_t data_section_start(const ByteCursor& c, uint64_t alignment, bool has_tensors) {
    const uint64_t pad = (alignment - c.pos() % alignment) % alignment;
    if (pad <= c.remaining()) return c.pos() + pad;
    if (!has_tensors) return c.size();
    c.fail(c.pos(),
           "the tensor data section would start at byte " + std::to_string(c.pos()) + " + " +
               std::to_string(pad) + " bytes of padding, past the end of the file (" +
               std::to_string(c.size()) + " bytes)",
           "padding to a multiple of " + std::to_string(alignment) + " and the tensor data");
}

}  // namespace

GgufFile GgufFile::open(const std::filesystem::path& path) {
    GgufFile f;
    f.name_ = path.string();
    f.map_ = std::make_unique<MappedFile>(path);
    f.bytes_ = f.map_->bytes();
    f.parse_all();
    return f;
}

GgufFile GgufFile::parse(std::span<const std::byte> bytes, std::string name) {
    GgufFile f;
    f.name_ = std::move(name);
    f.owned_.assign(bytes.begin(), bytes.end());
    f.bytes_ = f.owned_;
    f.parse_all();
    return f;
}

GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

void GgufFile::parse_all() {
    ByteCursor c(bytes_, name_);
    const Header h = read_header(c);
    version_ = h.version;
    read_metadata(c, h.n_kv);
    alignment_ = read_alignment();
    c.check_count(h.n_tensors_at, h.n_tensors, kMinTensorEntryBytes, "tensor count");
    TensorDirectory dir = read_tensor_directory(c, h.n_tensors, alignment_);
    data_offset_ = data_section_start(c, alignment_, !dir.tensors.empty());
    check_tensor_data(c, dir, data_offset_);
    tensors_ = std::move(dir.tensors);
    tensor_index_ = std::move(dir.index);
}

const Value* GgufFile::find(std::string_view key) const {
    const auto it = kv_index_.find(key);
    return it == kv_index_.end() ? nullptr : &kv_[it->second].value;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
    const auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

void GgufFile::drop_pages(std::span<const std::byte> bytes) const noexcept {
    if (map_) map_->drop_pages(bytes);
}

std::span<const std::byte> GgufFile::tensor_data(const TensorInfo& t) const {
    const uint64_t room = bytes_.size() - std::min<uint64_t>(data_offset_, bytes_.size());
    if (t.offset > room || t.n_bytes > room - t.offset) {
        throw Error(name_ + ": tensor '" + t.name + "' is not inside this file's data section");
    }
    return bytes_.subspan(data_offset_ + t.offset, t.n_bytes);
}

bool GgufFile::check_unchanged_on_disk() const {
    if (!map_) return false;  // parsed from memory: nothing on disk to change
    switch (map_->disk_state()) {
        case MappedFile::DiskState::Unchanged:
            return false;
        case MappedFile::DiskState::Replaced:
            return true;
        case MappedFile::DiskState::ModifiedInPlace:
            break;
    }
    throw Error(name_ + ": the model file was modified on disk while loaded; reload the model");
}

}  // namespace fluoro::gguf
