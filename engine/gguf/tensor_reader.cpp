#include "gguf/tensor_reader.h"

#include <algorithm>
#include <numeric>

#include "gguf/value_reader.h"

namespace fluoro::gguf {
namespace {

constexpr uint64_t kMaxDim = static_cast<uint64_t>(INT64_MAX);

// Built by appending: GCC 12 warns (-Wrestrict, a false positive) on "'" + std::string.
std::string quote(std::string_view name) {
    std::string s(1, '\'');
    s.append(name) += '\'';
    return s;
}
std::string tensor_text(std::string_view name) {
    return "tensor " + quote(name);
}

void check_name(const ByteCursor& c, std::string_view name, uint64_t at, uint64_t index,
                const TensorDirectory& dir) {
    if (name.empty())
        c.fail(at, "tensor " + std::to_string(index) + " has an empty name", "a non-empty name");
    if (name.size() > kMaxTensorNameBytes) {
        c.fail(at,
               "tensor name " + quote(name.substr(0, 64)) + "... is " +
                   std::to_string(name.size()) + " bytes long",
               "at most " + std::to_string(kMaxTensorNameBytes) + " bytes");
    }
    if (const auto it = dir.index.find(name); it != dir.index.end()) {
        c.fail(at,
               "duplicate tensor name " + quote(name) + " (first defined at byte " +
                   std::to_string(dir.places[it->second].name_at) + ")",
               "unique tensor names");
    }
}

// Reads n_dims and ne[]; fills the shape and the element count (checked against int64).
void read_shape(ByteCursor& c, TensorInfo& t) {
    const uint64_t dims_at = c.pos();
    t.n_dims = c.u32("the dimension count");
    if (t.n_dims < 1 || t.n_dims > kMaxDims) {
        c.fail(dims_at, tensor_text(t.name) + " has " + std::to_string(t.n_dims) + " dimensions",
               "1 to " + std::to_string(kMaxDims));
    }
    uint64_t elements = 1;
    for (uint32_t i = 0; i < t.n_dims; ++i) {
        const uint64_t at = c.pos();
        const uint64_t ne = c.u64("a tensor dimension");
        const std::string dim = "dimension " + std::to_string(i) + " of " + tensor_text(t.name);
        if (ne == 0) c.fail(at, dim + " is 0", "at least 1 (empty tensors are not supported)");
        if (ne > kMaxDim) c.fail(at, dim + " is " + std::to_string(ne), "at most 2^63-1");
        if (elements > kMaxDim / ne) {
            c.fail(at, tensor_text(t.name) + " has more than 2^63-1 elements",
                   "an element count that fits in int64");
        }
        elements *= ne;
        t.ne[i] = ne;
    }
    t.n_elements = elements;
}

// Reads the type id and sets n_bytes from the block geometry.
void read_type(ByteCursor& c, TensorInfo& t) {
    const uint64_t at = c.pos();
    const uint32_t raw = c.u32("a tensor type");
    const TypeTraits* traits = find_type_traits(raw);
    if (!traits)
        c.fail(at, tensor_text(t.name) + " has " + describe_raw_type(raw), "a ggml type id");
    t.type = traits->type;
    const auto row = row_bytes(t.type, t.ne[0]);
    if (!row) {
        c.fail(at,
               tensor_text(t.name) + " has rows of " + std::to_string(t.ne[0]) +
                   " elements, not a multiple of the " + std::string(traits->name) +
                   " block size " + std::to_string(traits->block_elems),
               "a row length that is a multiple of " + std::to_string(traits->block_elems));
    }
    const uint64_t rows = t.n_rows();
    if (rows != 0 && *row > UINT64_MAX / rows)
        c.fail(at, tensor_text(t.name) + " is too large", "a byte size that fits in 64 bits");
    t.n_bytes = *row * rows;
}

TensorInfo read_entry(ByteCursor& c, uint64_t index, uint64_t alignment, TensorDirectory& dir) {
    TensorInfo t;
    TensorPlace place;
    place.name_at = c.pos();
    t.name = std::string(read_utf8(c, "tensor name"));
    check_name(c, t.name, place.name_at, index, dir);
    read_shape(c, t);
    read_type(c, t);
    place.offset_at = c.pos();
    t.offset = c.u64("a tensor data offset");
    if (t.offset % alignment != 0) {
        c.fail(place.offset_at,
               tensor_text(t.name) + " data offset " + std::to_string(t.offset) +
                   " is not a multiple of the alignment " + std::to_string(alignment),
               "a multiple of " + std::to_string(alignment));
    }
    dir.places.push_back(place);
    return t;
}

std::string range_text(uint64_t begin, uint64_t n_bytes) {
    std::string s(1, '[');
    s.append(std::to_string(begin)).append(", ").append(std::to_string(begin + n_bytes)) += ')';
    return s;
}

void check_in_file(const ByteCursor& c, const TensorInfo& t, const TensorPlace& place,
                   uint64_t data_offset) {
    const uint64_t room = c.size() - data_offset;  // data_offset <= size, checked by the caller
    if (t.offset > room || t.n_bytes > room - t.offset) {
        c.fail(place.offset_at,
               tensor_text(t.name) + " data (" + std::to_string(t.n_bytes) +
                   " bytes at data offset " + std::to_string(t.offset) +
                   ") extends past the end of the file (" + std::to_string(c.size()) + " bytes)",
               "tensor data inside the file");
    }
}

}  // namespace

TensorDirectory read_tensor_directory(ByteCursor& c, uint64_t n, uint64_t alignment) {
    TensorDirectory dir;
    dir.tensors.reserve(static_cast<size_t>(std::min<uint64_t>(n, 1u << 16)));
    for (uint64_t i = 0; i < n; ++i) {
        dir.tensors.push_back(read_entry(c, i, alignment, dir));
        dir.index.emplace(dir.tensors.back().name, i);
    }
    return dir;
}

void check_tensor_data(const ByteCursor& c, const TensorDirectory& dir, uint64_t data_offset) {
    const auto& ts = dir.tensors;
    for (size_t i = 0; i < ts.size(); ++i) check_in_file(c, ts[i], dir.places[i], data_offset);
    std::vector<size_t> order(ts.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return ts[a].offset < ts[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
        const TensorInfo& prev = ts[order[k - 1]];
        const TensorInfo& cur = ts[order[k]];
        if (prev.offset + prev.n_bytes > cur.offset) {  // both in the file: no overflow
            c.fail(dir.places[order[k]].offset_at,
                   tensor_text(cur.name) + " data " + range_text(cur.offset, cur.n_bytes) +
                       " overlaps " + tensor_text(prev.name) + " data " +
                       range_text(prev.offset, prev.n_bytes),
                   "disjoint tensor data");
        }
    }
}

}  // namespace fluoro::gguf
