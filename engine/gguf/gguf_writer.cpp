#include "gguf/gguf_writer.h"

#include <fstream>
#include <variant>

#include "core/error.h"
#include "gguf/value_writer.h"

namespace fluoro::gguf {
namespace {

constexpr std::string_view kAlignmentKey = "general.alignment";
constexpr uint64_t kMaxLayoutAlignment = uint64_t{1} << 20;  // hostile values stay small files

bool is_power_of_two(uint64_t a) {
    return a != 0 && (a & (a - 1)) == 0;
}

uint64_t padded(uint64_t n, uint64_t alignment) {
    return (n + alignment - 1) / alignment * alignment;
}

template <typename T, typename Out>
Value array_value(ValueType elem, std::span<const T> v) {
    return Value(ValueType::Array, elem, std::vector<Out>(v.begin(), v.end()));
}

}  // namespace

GgufWriter::GgufWriter(uint32_t version) : version_(version) {
    if (version != 2 && version != 3)
        throw Error("GgufWriter: version " + std::to_string(version) + "; expected 2 or 3");
}

void GgufWriter::set_alignment(uint64_t alignment) {
    if (!is_power_of_two(alignment) || alignment > kMaxLayoutAlignment)
        throw Error("GgufWriter: alignment " + std::to_string(alignment) +
                    "; expected a power of two up to 1 MiB");
    const Value v(ValueType::U32, ValueType::U32, alignment);
    for (Entry& e : kv_)
        if (e.key == kAlignmentKey) {
            e.value = v;
            return;
        }
    kv_.push_back({std::string(kAlignmentKey), v});
}

uint64_t GgufWriter::alignment() const {
    for (const Entry& e : kv_) {
        if (e.key != kAlignmentKey) continue;
        uint64_t a = 0;
        if (const auto* u = std::get_if<uint64_t>(&e.value.storage())) a = *u;
        if (const auto* i = std::get_if<int64_t>(&e.value.storage()); i && *i > 0)
            a = static_cast<uint64_t>(*i);
        if (is_power_of_two(a) && a <= kMaxLayoutAlignment) return a;
    }
    return 32;
}

void GgufWriter::add(std::string key, Value value) {
    if (key.empty()) throw Error("GgufWriter: empty key");
    for (const Entry& e : kv_)
        if (e.key == key) throw Error("GgufWriter: duplicate key '" + key + "'");
    check_value(key, value);
    kv_.push_back({std::move(key), std::move(value)});
}

bool GgufWriter::erase(std::string_view key) {
    return std::erase_if(kv_, [&](const Entry& e) { return e.key == key; }) > 0;
}

void GgufWriter::add_u8(std::string k, uint8_t v) {
    add(std::move(k), Value(ValueType::U8, ValueType::U8, uint64_t{v}));
}
void GgufWriter::add_i8(std::string k, int8_t v) {
    add(std::move(k), Value(ValueType::I8, ValueType::I8, int64_t{v}));
}
void GgufWriter::add_u16(std::string k, uint16_t v) {
    add(std::move(k), Value(ValueType::U16, ValueType::U16, uint64_t{v}));
}
void GgufWriter::add_i16(std::string k, int16_t v) {
    add(std::move(k), Value(ValueType::I16, ValueType::I16, int64_t{v}));
}
void GgufWriter::add_u32(std::string k, uint32_t v) {
    add(std::move(k), Value(ValueType::U32, ValueType::U32, uint64_t{v}));
}
void GgufWriter::add_i32(std::string k, int32_t v) {
    add(std::move(k), Value(ValueType::I32, ValueType::I32, int64_t{v}));
}
void GgufWriter::add_u64(std::string k, uint64_t v) {
    add(std::move(k), Value(ValueType::U64, ValueType::U64, v));
}
void GgufWriter::add_i64(std::string k, int64_t v) {
    add(std::move(k), Value(ValueType::I64, ValueType::I64, v));
}
void GgufWriter::add_f32(std::string k, float v) {
    add(std::move(k), Value(ValueType::F32, ValueType::F32, double{v}));
}
void GgufWriter::add_f64(std::string k, double v) {
    add(std::move(k), Value(ValueType::F64, ValueType::F64, v));
}
void GgufWriter::add_bool(std::string k, bool v) {
    add(std::move(k), Value(ValueType::Bool, ValueType::Bool, v));
}
void GgufWriter::add_string(std::string k, std::string v) {
    add(std::move(k), Value(ValueType::String, ValueType::String, std::move(v)));
}

void GgufWriter::add_string_array(std::string k, std::vector<std::string> v) {
    add(std::move(k), Value(ValueType::Array, ValueType::String, std::move(v)));
}
void GgufWriter::add_f32_array(std::string k, std::span<const float> v) {
    add(std::move(k), array_value<float, double>(ValueType::F32, v));
}
void GgufWriter::add_i32_array(std::string k, std::span<const int32_t> v) {
    add(std::move(k), array_value<int32_t, int64_t>(ValueType::I32, v));
}
void GgufWriter::add_u32_array(std::string k, std::span<const uint32_t> v) {
    add(std::move(k), array_value<uint32_t, uint64_t>(ValueType::U32, v));
}

void GgufWriter::add_tensor(std::string name, GgmlType type, const std::vector<uint64_t>& ne,
                            std::span<const std::byte> data) {
    const auto fail = [&](const std::string& what) -> void {
        throw Error("GgufWriter: tensor '" + name + "': " + what);
    };
    if (name.empty()) fail("empty name");
    for (const Tensor& t : tensors_)
        if (t.name == name) fail("duplicate name");
    if (ne.empty() || ne.size() > 4) fail("expected 1 to 4 dimensions");
    uint64_t rows = 1;
    for (size_t i = 0; i < ne.size(); ++i) {
        if (ne[i] == 0) fail("a dimension is 0");
        if (i > 0) rows *= ne[i];
    }
    const auto row = row_bytes(type, ne[0]);
    if (!row) fail("row length is not a whole number of blocks");
    if (*row * rows != data.size())
        fail("data is " + std::to_string(data.size()) + " bytes; expected " +
             std::to_string(*row * rows));
    tensors_.push_back({std::move(name), type, ne, {data.begin(), data.end()}});
}

void GgufWriter::add_tensor_f32(std::string name, const std::vector<uint64_t>& ne,
                                std::span<const float> data) {
    add_tensor(std::move(name), GgmlType::F32, ne, std::as_bytes(data));
}

std::vector<std::byte> GgufWriter::to_bytes() const {
    const uint64_t align = alignment();
    std::vector<std::byte> image;
    ByteSink out(image);
    out.u32(0x46554747);  // "GGUF"
    out.u32(version_);
    out.u64(tensors_.size());
    out.u64(kv_.size());
    for (const Entry& e : kv_) {
        out.string(e.key);
        write_value(out, e.value);
    }
    uint64_t offset = 0;
    for (const Tensor& t : tensors_) {
        out.string(t.name);
        out.u32(static_cast<uint32_t>(t.ne.size()));
        for (const uint64_t n : t.ne) out.u64(n);
        out.u32(static_cast<uint32_t>(t.type));
        out.u64(offset);
        offset += padded(t.data.size(), align);
    }
    out.pad_to(align);
    for (const Tensor& t : tensors_) {
        out.bytes(t.data);
        out.pad_to(align);
    }
    return image;
}

void GgufWriter::write(const std::filesystem::path& path) const {
    const std::vector<std::byte> image = to_bytes();
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) throw Error(path.string() + ": cannot open for writing");
    f.write(reinterpret_cast<const char*>(image.data()),
            static_cast<std::streamsize>(image.size()));
    f.close();
    if (!f) throw Error(path.string() + ": write failed");
}

}  // namespace fluoro::gguf
